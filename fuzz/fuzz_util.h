// What every fuzz target (fuzz/*.cpp, one LLVMFuzzerTestOneInput each) shares: the rule that
// separates a finding from a refusal, and a per-process scratch directory for parsers that only
// take a path.
//
// The rule (issue 30): malformed input must end in the product's own error -- meshlm::Error or
// meshlm::InvalidInput, whose message names the file, offset or field. Any other exception
// escaping a parser (std::out_of_range, nlohmann::json's exceptions unwrapped, std::bad_alloc,
// std::filesystem_error, ...) is a finding: fuzz::guard prints it and aborts, which libFuzzer
// and the replay driver (fuzz/replay_main.cpp) both report with the input that caused it.
//
// exports: fuzz::guard, fuzz::scratch_dir, fuzz::write_input, fuzz::text
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace meshlm::fuzz {

// Runs `parse`; returns normally when it succeeds or throws meshlm::Error / InvalidInput, and
// aborts with the exception's type and message for anything else.
void guard(const std::function<void()>& parse);

// A directory private to this process (under /dev/shm when it exists, else the system's
// temporary directory), created on first use and removed at exit; with MESHLM_FUZZ_KEEP=DIR set,
// DIR, left in place (fuzz/make_seeds.sh takes the checkpoint fixtures' files from it).
const std::string& scratch_dir();

// Writes `data` to scratch_dir()/name (replacing it) and returns the path.
std::string write_input(const std::string& name, std::string_view data);

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

}  // namespace meshlm::fuzz

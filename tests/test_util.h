// Helpers shared by the test suites: paths to fixtures and the built binary, running a command.
#pragma once

#include <cstddef>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "meshlm/core/param_layout.h"
#include "meshlm/model/transformer.h"

namespace meshlm::test {

// The same floats, bit for bit (NaNs included). memcmp is not called on an empty vector's
// data(), which may be null: undefined even for 0 bytes.
inline bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// The model of the checkpoint and train tests: 2 layers, width 32, 2 heads (MLP width 128),
// vocabulary 300, context 16 -- heads, MLP and vocabulary all split over 2 model ranks.
ModelConfig tiny_model();

// Each block's flat range [lo[l], hi[l]) from the registry's layer tags, and the end of the last
// slice: an independent view of FSDP's units (embeddings [0, lo[0]), blocks, ln_f [hi[L-1], end)).
struct BlockSpans {
    std::vector<std::size_t> lo, hi;
    std::size_t end = 0;
};
BlockSpans block_spans(const ParamLayout& layout, int n_layer);

// Max |a - b| / max(max |b|, floor) over b's elements: an error relative to the tensor's scale.
double scaled_max_error(const float* a, const std::vector<float>& b, double floor = 1e-6);

// One training forward + backward of a freshly initialized model (init seed 11) on random tokens
// and targets (Philox(5, 0)) with dropout keyed (99, step 3): the loss, every gradient and the
// planned activation bytes. edit, if given, changes the initialized parameters first.
struct ModelStep {
    float loss = 0;
    std::vector<float> grads;
    std::size_t activation_bytes = 0;
};
ModelStep model_step(const ModelConfig& cfg, int B, int T, Recompute r = Recompute::none,
                     Precision p = Precision::fp32,
                     const std::function<void(float* params, std::size_t n)>& edit = {});

// True in a sanitizer build (scripts/test.sh --sanitize): shadow memory and ASan's quarantine
// make resident-memory measurements meaningless there, so those checks are left out.
constexpr bool sanitizer_build() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return true;
#elif defined(__has_feature)
    return __has_feature(address_sanitizer) || __has_feature(thread_sanitizer);
#else
    return false;
#endif
}

std::string source_dir();                      // repository root
std::string meshlm_binary();                   // build/meshlm
std::string fixture(const std::string& name);  // tests/fixtures/<name>
// The Python of the checkout's .venv (scripts/test.sh makes it), or "" when there is none.
std::string venv_python();
// A fresh empty directory under the system temp dir, removed at exit.
std::string temp_dir(const std::string& tag);

// Whole file as bytes ("" if it cannot be read); writes a file, creating its directory.
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& data);
// A small corpus of 300 `%`-separated documents with some structure to learn, written to
// DIR/corpus.txt; returns its path.
std::string write_test_corpus(const std::string& dir);
// Documents of a text file split at lines equal to `separator` (data/corpus_reader.h).
std::vector<std::string> read_documents(const std::string& path, const std::string& separator);

struct CommandResult {
    int exit_code;
    std::string output;  // stdout and stderr, interleaved
};
CommandResult run_command(const std::string& cmd);

}  // namespace meshlm::test

// Training is bit for bit what it was when tests/fixtures/golden_training.txt was recorded
// (tools/reference/record_golden.sh; tools/reference/README.md, "Golden training"): each case of
// the fixture's section for this build's reduction width runs `meshlm train` with its recorded
// arguments and environment, and every metrics.jsonl value and the final model.safetensors'
// SHA-256 must be the recorded ones. Built twice: here with the one-process cases, and in
// tests/mpi (MESHLM_MPIRUN defined) with the multi-rank ones. One test loops over the cases: the
// fixture is read when the test runs, so a re-recorded fixture needs no rebuild.
#include <dnnl.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "simd_lanes.h"
#include "test_util.h"

namespace meshlm {
namespace {

struct GoldenCase {
    std::string name;
    int ranks = 1;
    std::string key;                   // the section: the kernels' reduction width (simd_lanes.h)
    std::string env;                   // the fixture's environment and the case's own
    std::string args;                  // of `meshlm train`
    std::vector<std::string> metrics;  // metrics.jsonl lines, throughput fields left out
    std::string sha256;                // of model.safetensors
};

// The fixture's format: "env K=V ..." once; per section "key KEY", then per case
// "case NAME RANKS [K=V ...] ARGS...", its metrics lines and "sha256 HEX"; '#' starts a comment.
std::vector<GoldenCase> load_cases() {
    std::istringstream in(test::read_file(test::fixture("golden_training.txt")));
    std::string env, key;
    std::vector<GoldenCase> cases;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("env ", 0) == 0) {
            env = line.substr(4);
        } else if (line.rfind("key ", 0) == 0) {
            key = line.substr(4);
        } else if (line.rfind("case ", 0) == 0) {
            GoldenCase c;
            std::istringstream words(line.substr(5));
            words >> c.name >> c.ranks;
            c.key = key, c.env = env;
            for (std::string w; words >> w;)
                (c.args.empty() && w.rfind("--", 0) != 0 ? c.env : c.args) += " " + w;
            cases.push_back(c);
        } else if (line.rfind("{", 0) == 0 && !cases.empty()) {
            cases.back().metrics.push_back(line);
        } else if (line.rfind("sha256 ", 0) == 0 && !cases.empty()) {
            cases.back().sha256 = line.substr(7);
        }
    }
    return cases;
}

#ifdef MESHLM_MPIRUN
constexpr bool kMultiRank = true;
#else
constexpr bool kMultiRank = false;
#endif

// This executable's cases of the section `key`.
std::vector<GoldenCase> cases_of(const std::string& key) {
    std::vector<GoldenCase> mine;
    for (GoldenCase& c : load_cases())
        if (c.key == key && (c.ranks > 1) == kMultiRank) mine.push_back(c);
    return mine;
}

std::string recorded_keys() {
    std::string keys;
    for (const GoldenCase& c : load_cases())
        if (keys.find("'" + c.key + "'") == std::string::npos) keys += " '" + c.key + "'";
    return keys;
}

// A metrics.jsonl line as recorded: without the fields that vary from run to run.
nlohmann::json comparable(const std::string& line) {
    nlohmann::json j = nlohmann::json::parse(line);
    for (const char* volatile_key : {"tokens_per_s", "mfu", "comm_bytes", "time"})
        j.erase(volatile_key);
    return j;
}

// `have` without the keys the recording `want` lacks: a field added after the recording (as
// "tokens") is no difference; a recorded field missing or changed still is.
nlohmann::json recorded_keys_of(nlohmann::json have, const nlohmann::json& want) {
    for (auto it = have.begin(); it != have.end();)
        it = want.contains(it.key()) ? std::next(it) : have.erase(it);
    return have;
}

// The oneDNN ISA this process gets under the fixture's environment: its GEMM kernels sum in an
// order of their own per ISA, so the recorded bits hold only where they are the recorded ones.
dnnl_cpu_isa_t capped_isa(const std::string& env) {
    std::istringstream words(env);
    for (std::string w; words >> w;)
        if (const auto eq = w.find('='); w.rfind("ONEDNN_", 0) == 0 && eq != std::string::npos)
            setenv(w.substr(0, eq).c_str(), w.substr(eq + 1).c_str(), 1);
    return dnnl_get_effective_cpu_isa();
}

std::string sha256_of(const std::string& path) {
    const test::CommandResult r = test::run_command("sha256sum '" + path + "'");
    return r.exit_code == 0 ? r.output.substr(0, 64) : "(sha256sum failed: " + r.output + ")";
}

// Trains case c (data prepared into `cache`, shared by the cases) and compares with its
// recording.
void expect_recorded_training(const GoldenCase& c, const std::string& cache) {
    const std::string dir = test::temp_dir("golden_" + c.name);
    std::string launch = test::meshlm_binary();
#ifdef MESHLM_MPIRUN
    launch = std::string(MESHLM_MPIRUN) + " -np " + std::to_string(c.ranks) + " " + launch;
#endif
    const test::CommandResult r = test::run_command(
        "cd '" + test::source_dir() + "' && env" + c.env + " XDG_CACHE_HOME=" + cache +
        " timeout -s KILL 300 " + launch + " train" + c.args + " --config.log.dir=" + dir + "/run");
    ASSERT_EQ(r.exit_code, 0) << r.output;

    std::istringstream got_lines(test::read_file(dir + "/run/metrics.jsonl"));
    std::vector<std::string> got;
    for (std::string line; std::getline(got_lines, line);) got.push_back(line);
    for (std::size_t i = 0; i < c.metrics.size() && i < got.size(); ++i) {
        const nlohmann::json want = comparable(c.metrics[i]),
                             have = recorded_keys_of(comparable(got[i]), want);
        // The first difference only: every later step differs through it.
        ASSERT_EQ(want, have) << c.name << ": metrics.jsonl line " << i + 1
                              << " is the first that differs\n  recorded: " << want.dump()
                              << "\n  now:      " << have.dump();
    }
    ASSERT_EQ(got.size(), c.metrics.size()) << c.name << ": metrics.jsonl lines\n" << r.output;
    EXPECT_EQ(sha256_of(dir + "/run/model.safetensors"), c.sha256)
        << c.name << ": the final weights differ, every logged value being the recorded one";
}

TEST(GoldenTraining, MatchesTheRecordingBitwise) {
    const std::string key = test::simd_reduction_key();
    const std::vector<GoldenCase> cases = cases_of(key);
    if (cases.empty())
        GTEST_SKIP() << "NOT CHECKED: the fixture has no recording for this build's reductions ("
                     << key << "; recorded:" << recorded_keys()
                     << "). Record one with tools/reference/record_golden.sh on this machine "
                        "from the commit the fixture pins.";
    if (const dnnl_cpu_isa_t isa = capped_isa(cases[0].env); isa != dnnl_cpu_isa_avx2)
        GTEST_SKIP() << "NOT CHECKED: the fixture was recorded with oneDNN's AVX2 GEMM kernels, "
                        "and this CPU gives oneDNN ISA "
                     << static_cast<int>(isa) << " under '" << cases[0].env << "'";
    const std::string cache = test::temp_dir("golden_cache");
    for (const GoldenCase& c : cases) {
        const auto start = std::chrono::steady_clock::now();
        expect_recorded_training(c, cache);
        std::printf(
            "%s (%s): %.1f s\n", c.name.c_str(), key.c_str(),
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
}

}  // namespace
}  // namespace meshlm

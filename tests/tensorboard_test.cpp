// log.tensorboard: the event files a run writes, read by the tensorboard package's own
// EventAccumulator (tests/tensorboard/read_events.py, with the .venv of scripts/test.sh): every
// metrics.jsonl value is a scalar at its step, the final sample a text, and a run resumed in
// place from an earlier checkpoint leaves every step in the directory exactly once.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "test_util.h"

namespace fs = std::filesystem;

namespace meshlm {
namespace {

std::string tiny_flags(const std::string& corpus, const std::string& cache) {
    return " --config " + test::source_dir() + "/configs/tiny-gpt2.yaml" +
           " --config.model.n_layer=2 --config.model.d_model=32 --config.model.n_head=2"
           " --config.model.max_seq_len=32 --config.train.seq_len=32 --config.train.batch_size=4"
           " --config.train.threads=2 --config.train.peak_gflops=100 --config.log.interval=1"
           " --config.log.eval_interval=4 --config.train.eval_batches=2"
           " --config.train.final_eval_batches=2 --config.log.sample_tokens=8"
           " --config.log.tensorboard=true --config.data.path=" +
           corpus + " --config.data.cache_dir=" + cache;
}

std::string ascii_of(const std::string& s) {
    std::string a;
    for (const char c : s)
        if (static_cast<unsigned char>(c) < 0x80) a += c;
    return a;
}

nlohmann::json read_events(const std::string& tb_dir) {
    const auto r = test::run_command(test::venv_python() + " " + test::source_dir() +
                                     "/tests/tensorboard/read_events.py " + tb_dir);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const auto at = r.output.find("{\"scalars\"");  // after any warning of the import
    if (at == std::string::npos) {
        ADD_FAILURE() << "no JSON from read_events.py:\n" << r.output;
        return nlohmann::json::object();
    }
    return nlohmann::json::parse(r.output.substr(at));
}

// tag -> step -> value, from metrics.jsonl (nested objects as "group/name").
std::map<std::string, std::map<long, double>> metrics_values(const std::string& path) {
    std::map<std::string, std::map<long, double>> out;
    std::istringstream in(test::read_file(path));
    for (std::string line; std::getline(in, line);) {
        const auto j = nlohmann::json::parse(line);
        const long step = j.at("step");
        for (const auto& [k, v] : j.items()) {
            if (v.is_number() && k != "step" && k != "tokens") out[k][step] = v.get<double>();
            if (v.is_object())
                for (const auto& [name, x] : v.items()) out[k + "/" + name][step] = x;
        }
    }
    return out;
}

// Every metrics.jsonl value is TensorBoard's scalar at the same step, once: the losses and the
// learning rate to the bit (both are floats), the %.6g throughput and MFU to their 6 digits.
void expect_same_values(const std::string& run, const nlohmann::json& events) {
    const auto want = metrics_values(run + "/metrics.jsonl");
    ASSERT_FALSE(want.empty());
    for (const auto& [tag, steps] : want) {
        ASSERT_TRUE(events["scalars"].contains(tag)) << tag << " not in TensorBoard";
        std::map<long, double> got;
        for (const auto& e : events["scalars"][tag]) {
            const long step = e[0];
            EXPECT_FALSE(got.count(step)) << tag << " has step " << step << " twice";
            got[step] = e[1];
        }
        ASSERT_EQ(got.size(), steps.size()) << tag;
        for (const auto& [step, v] : steps) {
            ASSERT_TRUE(got.count(step)) << tag << " lacks step " << step;
            if (tag == "tokens_per_s" || tag == "mfu")
                EXPECT_NEAR(got[step], v, 1e-5 * std::abs(v)) << tag << " at " << step;
            else
                EXPECT_EQ(static_cast<float>(got[step]), static_cast<float>(v))
                    << tag << " at " << step;
        }
    }
}

TEST(TensorBoard, EventsHoldTheMetricsAndSurviveAResume) {
    ASSERT_FALSE(test::venv_python().empty()) << "no .venv: run scripts/test.sh";
    ASSERT_EQ(test::run_command(test::venv_python() + " -c 'import tensorboard'").exit_code, 0)
        << "tensorboard is not in .venv: run scripts/test.sh";
    const std::string dir = test::temp_dir("tensorboard"), run = dir + "/run";
    const std::string flags = tiny_flags(test::write_test_corpus(dir), dir + "/cache");
    auto r = test::run_command(test::meshlm_binary() + " train" + flags +
                               " --config.train.steps=12 --config.checkpoint.interval=5"
                               " --config.log.dir=" +
                               run);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto events = read_events(run + "/tb");
    ASSERT_EQ(events["files"].size(), 1u);
    const std::string first = events["files"][0][0];
    EXPECT_EQ(first.rfind("events.out.tfevents.", 0), 0u) << first;
    EXPECT_EQ(events["files"][0][2], "brain.Event:2");
    expect_same_values(run, events);
    EXPECT_EQ(events["scalars"]["val_loss"].size(), 3u);  // steps 4, 8 and 12 (the final one)
    // The sample: once, at the last step, as the console printed it.
    ASSERT_EQ(events["texts"]["sample"].size(), 1u);
    EXPECT_EQ(events["texts"]["sample"][0][0], 12);
    // (A byte-level model's sample: invalid UTF-8 bytes become U+FFFD there, which the
    // reader's strict decoding proves; the ASCII of the two is the same.)
    const std::string console = r.output.substr(r.output.rfind("sample:\n") + 8);
    EXPECT_EQ(ascii_of(events["texts"]["sample"][0][1]),
              ascii_of(console.substr(0, console.size() - 1)));

    // Resumed in place from step 10: the first file keeps steps up to 10, the new one has
    // 11 and 12; TensorBoard sees each step once, with the values of metrics.jsonl.
    r = test::run_command(test::meshlm_binary() + " train --resume " + run +
                          "/checkpoints/step_10");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    events = read_events(run + "/tb");
    ASSERT_EQ(events["files"].size(), 2u);
    EXPECT_EQ(events["files"][0][0], first);
    long max_first = 0, min_second = 1 << 30;
    for (const auto& s : events["files"][0][1]) max_first = std::max<long>(max_first, s);
    for (const auto& s : events["files"][1][1])
        if (s > 0) min_second = std::min<long>(min_second, s);
    EXPECT_EQ(max_first, 10);
    EXPECT_EQ(min_second, 11);
    expect_same_values(run, events);
    EXPECT_EQ(events["texts"]["sample"].size(), 1u);
}

// Without log.tensorboard no tb/ appears.
TEST(TensorBoard, OffByDefault) {
    const std::string dir = test::temp_dir("tensorboard_off"), run = dir + "/run";
    std::string flags = tiny_flags(test::write_test_corpus(dir), dir + "/cache");
    flags.replace(flags.find(" --config.log.tensorboard=true"), 30, "");
    const auto r = test::run_command(test::meshlm_binary() + " train" + flags +
                                     " --config.train.steps=2 --config.log.dir=" + run);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(fs::exists(run + "/metrics.jsonl"));
    EXPECT_FALSE(fs::exists(run + "/tb"));
}

}  // namespace
}  // namespace meshlm

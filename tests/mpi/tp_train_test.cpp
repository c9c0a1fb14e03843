// Tensor-parallel training through `mpirun ... meshlm train`: TP 2 alone and TP 2 x DP 2 with
// ZeRO stages 1 and 3 train like one process with the same global batch (losses per step and
// final weights), and a checkpoint moves between layouts (written at TP 2 x DP 2, resumed by
// one process, and the other way round), because files always hold the single-process layout;
// on real text, validation losses match too.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "meshlm/io/weights.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"
#include "test_util.h"
#include "train_runs.h"

namespace meshlm {
namespace {

constexpr int kSteps = 20;

using test::tiny_model;

std::string flags(const std::string& dir, int batch, int data, int model, int stage) {
    return test::tiny_flags(dir, kSteps, batch, 1, 10) + test::mesh_flags(data, model, stage);
}

using test::expect_same_training;
using test::run_train;
using test::TrainedRun;

TrainedRun train(int np, const std::string& dir, const std::string& args) {
    return test::train_run(np, dir, args, tiny_model());
}

// "params P grads G optimizer O working W" from a trainer or `info` output.
std::string per_rank_bytes(const std::string& output) {
    std::smatch m;
    std::regex re("params [0-9]+ grads [0-9]+ optimizer [0-9]+ working [0-9]+");
    return std::regex_search(output, m, re) ? m.str() : "";
}

class TensorParallelTraining : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = new std::string(test::temp_dir("tp_train"));
        ref_ = new TrainedRun(train(1, *dir_ + "/ref", flags(*dir_ + "/ref", 4, 1, 1, 0)));
    }
    static std::string* dir_;
    static TrainedRun* ref_;
};
std::string* TensorParallelTraining::dir_ = nullptr;
TrainedRun* TensorParallelTraining::ref_ = nullptr;

TEST_F(TensorParallelTraining, MatchesOneProcess) {
    ASSERT_EQ(ref_->steps.size(), static_cast<std::size_t>(kSteps)) << ref_->output;
    struct Case {
        int data, model, stage;
    };
    for (const Case c : {Case{1, 2, 0}, Case{2, 2, 1}, Case{2, 2, 3}}) {
        const std::string what = "TP " + std::to_string(c.model) + " x DP " +
                                 std::to_string(c.data) + " stage " + std::to_string(c.stage);
        const std::string dir = *dir_ + "/tp" + std::to_string(c.model) + "_dp" +
                                std::to_string(c.data) + "_z" + std::to_string(c.stage);
        TrainedRun got =
            train(c.data * c.model, dir, flags(dir, 4 / c.data, c.data, c.model, c.stage));
        expect_same_training(*ref_, got, kSteps, what);
        EXPECT_NE(got.output.find("tensor parallel: 2 model ranks per replica"), std::string::npos)
            << got.output;
        // `meshlm info` plans what the trainer allocates per rank (the local shard, chunked).
        auto info = test::run_command(std::string(MESHLM_BINARY) + " info" +
                                      flags(dir, 4 / c.data, c.data, c.model, c.stage));
        EXPECT_EQ(info.exit_code, 0) << info.output;
        EXPECT_EQ(per_rank_bytes(info.output), per_rank_bytes(got.output)) << what;
        EXPECT_FALSE(per_rank_bytes(info.output).empty()) << info.output;
    }
}

// Checkpoints hold the single-process layout whatever wrote them: step 10 of the reference
// resumes at TP 2 x DP 2 (stage 3), and step 10 of a TP 2 x DP 2 run resumes on one process;
// both end where the reference does.
TEST_F(TensorParallelTraining, CheckpointsMoveBetweenLayouts) {
    const std::string from_tp = *dir_ + "/tp2_dp2_z1/checkpoints/step_10";
    if (!std::filesystem::exists(from_tp + "/trainer.json"))
        GTEST_SKIP() << "needs MatchesOneProcess's run";
    const std::string one = *dir_ + "/resume_one";
    TrainedRun a = train(1, one,
                         " --resume " + from_tp +
                             " --config.parallel.data=1 --config.parallel.model=1"
                             " --config.parallel.zero_stage=0 --config.train.batch_size=4"
                             " --config.log.dir=" +
                             one);
    expect_same_training(*ref_, a, kSteps - 10, "TP 2 x DP 2 checkpoint resumed on 1 process");

    const std::string many = *dir_ + "/resume_tp";
    TrainedRun b = train(4, many,
                         " --resume " + *dir_ +
                             "/ref/checkpoints/step_10 --config.parallel.data=2"
                             " --config.parallel.model=2 --config.parallel.zero_stage=3"
                             " --config.train.batch_size=2 --config.log.dir=" +
                             many);
    expect_same_training(*ref_, b, kSteps - 10,
                         "1-process checkpoint resumed at TP 2 x DP 2 stage 3");
}

// Real text with validation: the model ranks of a replica read the same rows, validation runs
// through the sharded model (TP 2 x DP 2, ZeRO 2), and the end-of-training sample runs on rank
// 0 from the gathered weights.
TEST(TensorParallelText, MatchesOneProcess) {
    const std::string dir = test::temp_dir("tp_text");
    test::write_test_corpus(dir);
    auto text = [&](const std::string& run_dir, int batch) {
        return test::gpt2_config() +
               " --config.model.n_layer=2 --config.model.d_model=32 --config.model.n_head=2"
               " --config.model.vocab_size=258 --config.model.max_seq_len=16"
               " --config.train.seq_len=16 --config.train.steps=12 --config.train.threads=1"
               " --config.train.peak_gflops=100 --config.log.interval=1"
               " --config.log.eval_interval=6 --config.train.eval_batches=2"
               " --config.log.sample_tokens=8 --config.checkpoint.interval=0"
               " --config.data.path=" +
               dir + "/corpus.txt --config.data.cache_dir=" + dir +
               "/cache --config.train.batch_size=" + std::to_string(batch) +
               " --config.log.dir=" + run_dir;
    };
    auto one = run_train(1, text(dir + "/one", 4));
    ASSERT_EQ(one.exit_code, 0) << one.output;
    auto tp = run_train(4, text(dir + "/tp", 2) +
                               " --config.parallel.data=2 --config.parallel.model=2"
                               " --config.parallel.zero_stage=2");
    ASSERT_EQ(tp.exit_code, 0) << tp.output;
    EXPECT_NE(tp.output.find("sample:"), std::string::npos) << tp.output;
    auto lines = [](const std::string& path) {
        std::vector<nlohmann::json> out;
        std::istringstream in(test::read_file(path));
        for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
        return out;
    };
    auto a = lines(dir + "/one/metrics.jsonl"), b = lines(dir + "/tp/metrics.jsonl");
    ASSERT_EQ(a.size(), b.size());
    int vals = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        for (const char* key : {"loss", "val_loss"})
            if (a[i].contains(key)) {
                ASSERT_TRUE(b[i].contains(key)) << b[i];
                const double x = a[i][key], y = b[i][key];
                EXPECT_LE(std::abs(x - y), 1e-5 * std::abs(x)) << key << " at line " << i;
                vals += std::string(key) == "val_loss";
            }
    EXPECT_EQ(vals, 2);
}

}  // namespace
}  // namespace meshlm

// Data-parallel training through `mpirun ... meshlm train`: every ZeRO stage on 2 and 4 ranks
// trains like one process with the same global batch (losses and final weights), gradient
// accumulation composes with it, each rank allocates what the ZeRO paper says and sends what
// the ring convention says, and a failing rank ends the job.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
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

std::string flags(const std::string& dir, int batch, int accum) {
    return test::tiny_flags(dir, kSteps, batch, accum, 0);
}

using test::expect_same_training;
using test::run_train;
using test::TrainedRun;

TrainedRun train(int np, const std::string& dir, const std::string& args) {
    return test::train_run(np, dir, args, tiny_model());
}

class DataParallel : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = new std::string(test::temp_dir("dp"));
        // One process with the global batch of 4 rows (and of 4 micro-batches of 1 row).
        ref_ = new TrainedRun(train(1, *dir_ + "/ref", flags(*dir_ + "/ref", 4, 1)));
        ref_accum_ = new TrainedRun(train(1, *dir_ + "/ref_acc", flags(*dir_ + "/ref_acc", 1, 4)));
    }
    static std::string* dir_;
    static TrainedRun* ref_;
    static TrainedRun* ref_accum_;
};
std::string* DataParallel::dir_ = nullptr;
TrainedRun* DataParallel::ref_ = nullptr;
TrainedRun* DataParallel::ref_accum_ = nullptr;

// Ψ: the flat buffer padded to N chunks of a multiple of 16 floats (parallel/zero_plan.h).
std::size_t padded_floats(int n) {
    const std::size_t total = transformer_layout(tiny_model()).total();
    const std::size_t chunk = n == 1 ? total : ((total + n - 1) / n + 15) / 16 * 16;
    return chunk * n;
}

// Rank 0's bytes per step at stage 2 or 3 with `accum` micro-batches (parallel/fsdp.h),
// derived from the registry's layer tags: a unit is the embeddings (everything before block 0),
// a block, or ln_f (everything after the last block); rank 0 owns the part of it inside
// [0, chunk). Each collective on a unit costs (unit - own part) floats. Stage 3 gathers the
// embeddings and ln_f once per step and every block twice per micro-batch; both stages
// reduce-scatter the blocks once per micro-batch and the embeddings and ln_f once per step;
// stage 2 then all-gathers the updated parameters: (Ψ - chunk) floats.
std::size_t streamed_step_bytes(int n, int accum, int stage) {
    const ParamLayout layout = transformer_layout(tiny_model());
    const std::size_t chunk = padded_floats(n) / n;
    const int L = tiny_model().n_layer;
    const auto [lo, hi, end] = test::block_spans(layout, L);
    auto others = [&](std::size_t a, std::size_t b) {  // floats of [a, b) not on rank 0
        return (b - a) - (std::min(b, chunk) > a ? std::min(b, chunk) - a : 0);
    };
    const std::size_t per_block = stage == 3 ? 3 : 1, root = stage == 3 ? 2 : 1;
    std::size_t floats = root * (others(0, lo[0]) + others(hi[L - 1], end));
    for (int l = 0; l < L; ++l)
        floats += per_block * static_cast<std::size_t>(accum) * others(lo[l], hi[l]);
    if (stage == 2) floats += padded_floats(n) - chunk;
    return floats * sizeof(float);
}

std::map<std::string, std::size_t> allocated(const std::string& output) {
    std::smatch m;
    std::regex re("params ([0-9]+) grads ([0-9]+) optimizer ([0-9]+) working ([0-9]+)");
    std::map<std::string, std::size_t> out;
    if (std::regex_search(output, m, re))
        out = {{"params", std::stoull(m[1])},
               {"grads", std::stoull(m[2])},
               {"optimizer", std::stoull(m[3])},
               {"working", std::stoull(m[4])}};
    return out;
}

TEST_F(DataParallel, EveryStageMatchesOneProcess) {
    for (int np : {2, 4})
        for (int stage = 0; stage <= 3; ++stage) {
            const std::string what = "np " + std::to_string(np) + " stage " + std::to_string(stage);
            const std::string dir =
                *dir_ + "/np" + std::to_string(np) + "_z" + std::to_string(stage);
            TrainedRun got =
                train(np, dir,
                      flags(dir, 4 / np, 1) + " --config.parallel.data=" + std::to_string(np) +
                          " --config.parallel.zero_stage=" + std::to_string(stage));
            expect_same_training(*ref_, got, kSteps, what);
            // The ranks wrote model.safetensors in place (train/final_weights.h): the same
            // header and size as the one process's file, and (above) the same weights.
            const std::string ref_file = test::read_file(*dir_ + "/ref/model.safetensors"),
                              got_file = test::read_file(dir + "/model.safetensors");
            ASSERT_EQ(ref_file.size(), got_file.size()) << what;
            std::uint64_t head = 0;
            std::memcpy(&head, ref_file.data(), 8);
            EXPECT_EQ(ref_file.substr(0, 8 + head), got_file.substr(0, 8 + head)) << what;
            EXPECT_FALSE(std::filesystem::exists(dir + "/model.safetensors.tmp")) << what;

            // Allocations per rank follow the ZeRO paper (fp32 + AdamW, Ψ padded floats).
            const std::size_t psi = padded_floats(np), shard = psi / np;
            auto a = allocated(got.output);
            ASSERT_EQ(a.size(), 4u) << got.output;
            // The largest rank's peak RSS is reported, at least the state it allocated.
            std::smatch rss;
            ASSERT_TRUE(std::regex_search(got.output, rss,
                                          std::regex("peak RSS during training \\(largest rank\\): "
                                                     "([0-9]+) MiB")))
                << got.output;
            const std::size_t state = a["params"] + a["grads"] + a["optimizer"];
            EXPECT_GE(std::stoul(rss[1]) * 1048576 + 1048576, state) << what;
            EXPECT_EQ(a["params"], 4 * (stage >= 3 ? shard : psi)) << what;
            EXPECT_EQ(a["grads"], 4 * (stage >= 2 ? shard : psi)) << what;
            EXPECT_EQ(a["optimizer"], 8 * (stage >= 1 ? shard : psi)) << what;
            EXPECT_EQ(a["params"] + a["grads"] + a["optimizer"], stage == 0   ? 16 * psi
                                                                 : stage == 1 ? 8 * psi + 8 * shard
                                                                 : stage == 2 ? 4 * psi + 12 * shard
                                                                              : 16 * shard)
                << what;

            // Rank 0's bytes per step: the ring convention (rank 0 owns the one element of the
            // small loss / count all-reduces, so they add nothing). Stage 0 all-reduces the
            // gradients: 2Ψ(N-1)/N floats; stage 1 adds the parameter all-gather; stages 2-3
            // reduce-scatter unit by unit (3 also gathers them): ≈ 2Ψ(N-1)/N and 3Ψ(N-1)/N.
            const std::size_t ring = (psi - shard) * sizeof(float);
            const std::size_t expect = stage == 0   ? 2 * ring
                                       : stage == 1 ? 3 * ring
                                                    : streamed_step_bytes(np, 1, stage);
            for (const auto& s : got.steps) EXPECT_EQ(s["comm_bytes"], expect) << what;

            // `meshlm info` plans the same bytes (for the same precision: bf16's ZeRO-3 adds
            // bf16 receive buffers).
            auto info = test::run_command(
                std::string(MESHLM_BINARY) + " info" + test::gpt2_config() +
                " --config.train.precision=fp32"
                " --config.model.n_layer=2 "
                "--config.model.d_model=32 --config.model.n_head=2 "
                "--config.model.vocab_size=300 "
                "--config.model.max_seq_len=16 --config.train.seq_len=16 "
                "--config.parallel.data=" +
                std::to_string(np) + " --config.parallel.zero_stage=" + std::to_string(stage));
            EXPECT_EQ(allocated(info.output), a) << info.output;
        }
}

TEST_F(DataParallel, TwoRanksTimesAccumTwoMatchAccumFour) {
    for (int stage : {0, 2, 3}) {
        const std::string dir = *dir_ + "/acc_z" + std::to_string(stage);
        TrainedRun got = train(
            2, dir,
            flags(dir, 1, 2) +
                " --config.parallel.data=2 --config.parallel.zero_stage=" + std::to_string(stage));
        expect_same_training(*ref_accum_, got, kSteps,
                             "np 2 accum 2 stage " + std::to_string(stage));
        if (stage >= 2)  // blocks are gathered (3) and reduced once per micro-batch
            for (const auto& s : got.steps)
                EXPECT_EQ(s["comm_bytes"], streamed_step_bytes(2, 2, stage));
    }
}

TEST_F(DataParallel, CheckpointResumeWithShardedOptimizer) {
    // Stage 2, interrupted at step 10 (checkpoint gathered to rank 0) and resumed on 2 ranks:
    // the same final weights as the uninterrupted run.
    const std::string dir = *dir_ + "/resume";
    const std::string dp = " --config.parallel.data=2 --config.parallel.zero_stage=2";
    const std::string dir2 = *dir_ + "/resume2";
    auto full =
        run_train(2, flags(dir2, 2, 1) + dp +
                         " --config.checkpoint.interval=10 --config.checkpoint.keep_last=5");
    ASSERT_EQ(full.exit_code, 0) << full.output;
    auto again = run_train(2, " --resume " + dir2 + "/checkpoints/step_10 --config.log.dir=" + dir +
                                  "_resumed --config.checkpoint.interval=0");
    ASSERT_EQ(again.exit_code, 0) << again.output;
    const ParamLayout layout = transformer_layout(tiny_model());
    std::vector<float> a(layout.total()), b(layout.total());
    load_weights(dir2 + "/model.safetensors", layout, a.data());
    load_weights(dir + "_resumed/model.safetensors", layout, b.data());
    EXPECT_EQ(a, b) << "a resumed stage-2 run continues bitwise exactly";
}

// Losses and validation losses logged in two metrics.jsonl files agree to 1e-5 relative.
void expect_same_text_metrics(const std::string& ref, const std::string& got,
                              const std::string& what) {
    auto lines = [](const std::string& path) {
        std::vector<nlohmann::json> out;
        std::istringstream in(test::read_file(path));
        for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
        return out;
    };
    auto a = lines(ref), b = lines(got);
    ASSERT_EQ(a.size(), b.size()) << what;
    int vals = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        for (const char* key : {"loss", "val_loss"})
            if (a[i].contains(key)) {
                ASSERT_TRUE(b[i].contains(key)) << b[i];
                const double x = a[i][key], y = b[i][key];
                EXPECT_LE(std::abs(x - y), 1e-5 * std::abs(x))
                    << what << ": " << key << " at line " << i;
                vals += std::string(key) == "val_loss";
            }
    EXPECT_EQ(vals, 2) << what;
}

// Real text: each rank takes its rows of the loader's global batch (data/loader.h), rank 0
// prepares the corpus while the others wait, and every rank evaluates alike.
TEST(DataParallelText, MatchesOneProcess) {
    const std::string dir = test::temp_dir("dp_text");
    test::write_test_corpus(dir);
    auto text = [&](const std::string& run_dir, int batch) {
        return test::gpt2_config() +
               " --config.model.n_layer=2 --config.model.d_model=32 --config.model.n_head=2"
               " --config.model.max_seq_len=16 --config.train.seq_len=16 --config.train.steps=12"
               " --config.train.grad_accum=2 --config.train.threads=1"
               " --config.train.peak_gflops=100 --config.log.interval=1"
               " --config.log.eval_interval=6 --config.train.eval_batches=2"
               " --config.train.final_eval_batches=0 --config.log.sample_tokens=0"
               " --config.checkpoint.interval=0 --config.data.path=" +
               dir + "/corpus.txt --config.data.cache_dir=" + dir +
               "/cache --config.train.batch_size=" + std::to_string(batch) +
               " --config.log.dir=" + run_dir;
    };
    auto one = run_train(1, text(dir + "/one", 4));
    ASSERT_EQ(one.exit_code, 0) << one.output;
    // 4 ranks x 1 row: the final evaluation (the whole validation split) ends on a global batch
    // of fewer than 4 rows, so rank 0 holds none of them and must still join FSDP's collective
    // forward (Learner::eval_losses with no rows); otherwise the job hangs.
    std::smatch val;
    ASSERT_TRUE(std::regex_search(one.output, val, std::regex("validation [0-9]+ docs / ([0-9]+)")))
        << one.output;
    ASSERT_NE((std::stoul(val[1]) - 1) / 16 % 4, 0u) << "the premise: a short last batch";
    for (int np : {2, 4}) {
        const std::string run_dir = dir + "/np" + std::to_string(np);
        auto many =
            run_train(np, text(run_dir, 4 / np) + " --config.parallel.data=" + std::to_string(np) +
                              " --config.parallel.zero_stage=3");
        ASSERT_EQ(many.exit_code, 0) << many.output;
        expect_same_text_metrics(dir + "/one/metrics.jsonl", run_dir + "/metrics.jsonl",
                                 std::to_string(np) + " ranks");
    }
}

// `mpirun -np 2 meshlm train` with no parallel.* key: data parallelism over the two ranks, the
// same training as parallel.data=2 spelled out.
TEST(DataParallelLaunch, RanksWithoutParallelKeysAreDataParallel) {
    const std::string dir = test::temp_dir("dp_launch");
    auto plain = run_train(2, test::tiny_flags(dir + "/plain", 4, 2, 1, 0));
    ASSERT_EQ(plain.exit_code, 0) << plain.output;
    EXPECT_NE(plain.output.find("parallel: data=2 model=1"), std::string::npos) << plain.output;
    const std::string yaml = test::read_file(dir + "/plain/config.yaml");
    EXPECT_NE(yaml.find("parallel:\n  data: 2\n  model: 1\n"), std::string::npos) << yaml;
    auto spelled =
        run_train(2, test::tiny_flags(dir + "/spelled", 4, 2, 1, 0) + test::mesh_flags(2, 1, 0));
    ASSERT_EQ(spelled.exit_code, 0) << spelled.output;
    EXPECT_EQ(test::read_file(dir + "/plain/model.safetensors"),
              test::read_file(dir + "/spelled/model.safetensors"));
}

int count_of(const std::string& text, const std::string& what) {
    int n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

TEST(DataParallelFailure, AFailingRankEndsTheJob) {
    for (int np : {2, 4}) {
        // A run directory per job: the failed first job's directory holds a run.
        const std::string dir = test::temp_dir("dp_fail" + std::to_string(np));
        auto r = run_train(np, flags(dir, 1, 1) + " --config.parallel.data=" + std::to_string(np),
                           "MESHLM_FAULT_RANK=1 MESHLM_FAULT_AT=train_step:3");
        EXPECT_NE(r.exit_code, 0) << r.output;
        EXPECT_NE(r.exit_code, 137) << "killed by the timeout: the job hung\n" << r.output;
        EXPECT_EQ(count_of(r.output, "injected fault at train_step:3 on rank 1"), 1) << r.output;
        EXPECT_EQ(count_of(r.output, "error: rank 1/" + std::to_string(np)), 1) << r.output;
        EXPECT_EQ(count_of(r.output, "saved "), 0) << r.output;
    }
}

TEST(DataParallelFailure, AMeshThatDoesNotFitIsReportedOnce) {
    const std::string dir = test::temp_dir("dp_mesh");
    auto r = run_train(2, flags(dir, 1, 1) + " --config.parallel.data=3");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(count_of(r.output, "parallel.data (3) x parallel.model (1) = 3"), 1) << r.output;
    // Key/value heads that do not split over the model ranks: one clear error, before training.
    auto tp =
        run_train(2, flags(dir, 1, 1) + " --config.parallel.model=2 --config.model.n_kv_head=1");
    EXPECT_NE(tp.exit_code, 0) << tp.output;
    EXPECT_EQ(count_of(tp.output,
                       "(model.n_kv_head, 0 = n_head) (1) must be divisible by "
                       "parallel.model (2)"),
              1)
        << tp.output;
}

}  // namespace
}  // namespace meshlm

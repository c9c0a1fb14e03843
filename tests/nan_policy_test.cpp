// train.nan_policy end to end through the `meshlm` binary on one process, with a NaN injected
// into a gradient at a chosen step (train.debug_inject_nan_step): halt checkpoints exactly the
// weights of the step before and names the step and the tensor; skip leaves the weights and
// optimizer state of the bad step as they were and counts it; rollback reloads the last
// checkpoint, skips batches, and a resume after it is exact; a loss spike triggers the policy;
// bad values of the keys are refused by name. (tests/mpi/nan_fault_test.cpp: DP 2 and TP 2.)
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "meshlm/io/checkpoint.h"
#include "meshlm/model/transformer_layout.h"
#include "meshlm/train/full_state.h"
#include "test_util.h"

namespace meshlm {
namespace {

namespace fs = std::filesystem;

using test::tiny_model;

// tiny_model(), a GPT-2 (configs/tiny-gpt2.yaml, the option table's defaults; `meshlm train`
// without --config trains the default run's Transformer-VQ), on synthetic tokens, fp32, one
// thread, a checkpoint every `interval` steps (10 kept).
std::string flags(const std::string& dir, int steps, int interval) {
    return " --config " + test::source_dir() + "/configs/tiny-gpt2.yaml" +
           " --config.data.synthetic=true --config.model.n_layer=2 --config.model.d_model=32"
           " --config.model.n_head=2 --config.model.vocab_size=300 --config.model.max_seq_len=16"
           " --config.train.seq_len=16 --config.train.batch_size=2 --config.train.threads=1"
           " --config.train.precision=fp32 --config.train.peak_gflops=100"
           " --config.log.interval=1 --config.log.sample_tokens=0 --config.optim.warmup_steps=2"
           " --config.checkpoint.keep_last=10 --config.train.steps=" +
           std::to_string(steps) + " --config.checkpoint.interval=" + std::to_string(interval) +
           " --config.log.dir=" + dir;
}

test::CommandResult train(const std::string& args) {
    return test::run_command(test::meshlm_binary() + " train" + args);
}

std::string ckpt(const std::string& run, long step) {
    return run + "/checkpoints/step_" + std::to_string(step);
}

std::vector<nlohmann::json> metrics(const std::string& run) {
    std::vector<nlohmann::json> out;
    std::istringstream in(test::read_file(run + "/metrics.jsonl"));
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
    return out;
}

FullTrainingState state(const std::string& dir) {
    return read_full_state(dir, tiny_model());
}

bool all_finite(const std::vector<float>& v) {
    for (float x : v)
        if (!std::isfinite(x)) return false;
    return true;
}

std::string first_tensor() {
    return transformer_layout(tiny_model()).slices()[0].name;
}

TEST(NanPolicy, HaltCheckpointsTheStepBeforeAndNamesStepAndTensor) {
    const std::string dir = test::temp_dir("nanhalt"), ref = dir + "/ref", run = dir + "/run";
    ASSERT_EQ(train(flags(ref, 8, 1)).exit_code, 0);  // the same schedule (8 steps)
    // Checkpoints at 3; the NaN at step 5: halt writes step 4 itself.
    auto r = train(flags(run, 8, 3) + " --config.train.debug_inject_nan_step=5");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("training halted (train.nan_policy=halt): step 5: non-finite"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("first non-finite tensor: gradient of " + first_tensor()),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("update of step 5 was not applied"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("grad_clip"), std::string::npos) << "clipping is on: " << r.output;
    EXPECT_EQ(test::read_file(run + "/checkpoints/latest"), "step_4\n");
    // Bitwise the uninterrupted run's step 4: weights and optimizer state, files and all.
    for (const char* f : {"/model.safetensors", "/optimizer.safetensors"})
        EXPECT_EQ(test::read_file(ckpt(run, 4) + f), test::read_file(ckpt(ref, 4) + f)) << f;
    EXPECT_TRUE(all_finite(state(ckpt(run, 4)).params));
    EXPECT_FALSE(fs::exists(ckpt(run, 5)));
    EXPECT_FALSE(fs::exists(run + "/model.safetensors"));
    const auto m = metrics(run);
    ASSERT_EQ(m.size(), 5u);
    EXPECT_EQ(m.back()["fault"], "non_finite");
    EXPECT_TRUE(m.back()["grad_norm"].is_null());
    // And it resumes from there (the injection is spent by a new process only at step 5 again:
    // off here).
    r = test::run_command(test::meshlm_binary() + " train --resume " + run +
                          " --config.train.debug_inject_nan_step=0");
    EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(NanPolicy, SkipLeavesTheStepsStateAsBeforeAndCountsIt) {
    const std::string dir = test::temp_dir("nanskip"), ref = dir + "/ref", run = dir + "/run";
    ASSERT_EQ(train(flags(ref, 6, 1)).exit_code, 0);
    auto r = train(flags(run, 6, 1) +
                   " --config.train.nan_policy=skip --config.train.debug_inject_nan_step=4");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("step 4: non-finite loss"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("update skipped (train.nan_policy=skip; 1 skipped so far)"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("| skipped 1"), std::string::npos) << r.output;
    // Before the bad step: the uninterrupted run's state, bitwise.
    EXPECT_EQ(test::read_file(ckpt(run, 3) + "/model.safetensors"),
              test::read_file(ckpt(ref, 3) + "/model.safetensors"));
    // The bad step: parameters and moments unchanged, the step count advanced.
    const FullTrainingState s3 = state(ckpt(run, 3)), s4 = state(ckpt(run, 4));
    EXPECT_EQ(s4.params, s3.params);
    EXPECT_EQ(s4.m, s3.m);
    EXPECT_EQ(s4.v, s3.v);
    EXPECT_EQ(s4.step, 4);
    // After it, training goes on.
    const FullTrainingState s6 = state(ckpt(run, 6));
    EXPECT_NE(s6.params, s4.params);
    EXPECT_TRUE(all_finite(s6.params) && all_finite(s6.m) && all_finite(s6.v));
    const auto m = metrics(run);
    ASSERT_EQ(m.size(), 6u);
    EXPECT_EQ(m[3]["fault"], "non_finite");
    EXPECT_EQ(m[3]["skipped_steps"], 1);
    EXPECT_EQ(m[5]["skipped_steps"], 1);
    EXPECT_FALSE(m[5].contains("fault"));
    EXPECT_TRUE(fs::exists(run + "/model.safetensors"));
}

TEST(NanPolicy, RollbackReloadsSkipsBatchesAndResumesExactly) {
    const std::string dir = test::temp_dir("nanroll"), run = dir + "/run";
    const std::string common =
        " --config.train.nan_policy=rollback"
        " --config.train.rollback_skip_batches=3";
    auto r = train(flags(run, 8, 2) + common + " --config.train.debug_inject_nan_step=5");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("step 5: non-finite"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("rolled back to " + ckpt(run, 4) +
                            " (step 4), skipping the next 3 batches (train.nan_policy=rollback; "
                            "rollback 1 of at most 3)"),
              std::string::npos)
        << r.output;
    const auto m = metrics(run);
    ASSERT_EQ(m.size(), 5u + 4u);  // steps 1-4, the bad 5, then 5-8 again
    EXPECT_EQ(m[4]["rolled_back_to"], 4);
    EXPECT_EQ(m[5]["step"], 5);
    EXPECT_NE(m[4]["loss"], m[5]["loss"]);  // the replayed step 5 trains on other batches
    // Synthetic batches after the rollback are those 3 batches on, and a checkpoint says so.
    const auto j = nlohmann::json::parse(test::read_file(ckpt(run, 6) + "/trainer.json"));
    EXPECT_EQ(j["rng"]["batch_offset"], 3);
    EXPECT_TRUE(all_finite(state(ckpt(run, 8)).params));
    // A resume from a checkpoint after the rollback continues exactly.
    const std::string model8 = test::read_file(ckpt(run, 8) + "/model.safetensors");
    fs::remove_all(ckpt(run, 8));
    test::write_file(run + "/checkpoints/latest", "step_6\n");
    r = test::run_command(test::meshlm_binary() + " train --resume " + run + " " + common);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(test::read_file(ckpt(run, 8) + "/model.safetensors"), model8);
}

TEST(NanPolicy, RollbackOnRealTextSkipsLoaderBatchesAndResumesExactly) {
    const std::string dir = test::temp_dir("nanrolltext"), run = dir + "/run";
    std::string args = flags(run, 8, 2) +
                       " --config.train.nan_policy=rollback"
                       " --config.train.rollback_skip_batches=2"
                       " --config.train.final_eval_batches=1"
                       " --config.data.path=" +
                       test::write_test_corpus(dir) + " --config.data.cache_dir=" + dir + "/cache";
    args.replace(args.find(" --config.data.synthetic=true"), 29, "");
    auto r = train(args + " --config.train.debug_inject_nan_step=5");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("rolled back to " + ckpt(run, 4) + " (step 4), skipping the next 2"),
              std::string::npos)
        << r.output;
    // Step 5 after the rollback trains on other rows than the bad step 5 did (same weights).
    const auto m = metrics(run);
    ASSERT_GE(m.size(), 6u);
    EXPECT_EQ(m[4]["step"], 5);
    EXPECT_EQ(m[5]["step"], 5);
    EXPECT_NE(m[4]["loss"], m[5]["loss"]);
    // The loader's state after the skipped batches is in the next checkpoint: resuming from it
    // gives the same step 8.
    const std::string model8 = test::read_file(ckpt(run, 8) + "/model.safetensors");
    fs::remove_all(ckpt(run, 8));
    test::write_file(run + "/checkpoints/latest", "step_6\n");
    r = test::run_command(test::meshlm_binary() + " train --resume " + run);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(test::read_file(ckpt(run, 8) + "/model.safetensors"), model8);
}

TEST(NanPolicy, RollbackHaltsPastMaxRollbacks) {
    const std::string run = test::temp_dir("nanmax") + "/run";
    auto r = train(flags(run, 6, 2) +
                   " --config.train.nan_policy=rollback --config.train.max_rollbacks=0"
                   " --config.train.debug_inject_nan_step=3");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("training halted (train.nan_policy=rollback after 0 rollbacks, "
                            "train.max_rollbacks): step 3"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(test::read_file(run + "/checkpoints/latest"), "step_2\n");
}

TEST(NanPolicy, ALossSpikeIsLoggedAndTriggersThePolicy) {
    // A factor below 1 makes every step after the window a "spike": deterministic.
    const std::string run = test::temp_dir("spike") + "/run";
    auto r = train(flags(run, 6, 0) +
                   " --config.train.nan_policy=skip --config.train.spike_factor=0.5"
                   " --config.train.spike_window=3");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("step 4: loss spike: "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("the mean of the last 3 steps (train.spike_factor)"), std::string::npos)
        << r.output;
    const auto m = metrics(run);
    ASSERT_EQ(m.size(), 6u);
    EXPECT_FALSE(m[2].contains("fault"));
    EXPECT_EQ(m[3]["fault"], "spike");
    EXPECT_EQ(m[5]["skipped_steps"], 3);
    // Off by default: the same run without the factor skips nothing.
    const std::string plain = test::temp_dir("spike0") + "/run";
    r = train(flags(plain, 6, 0) + " --config.train.spike_window=3");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.find("skipped"), std::string::npos) << r.output;
}

TEST(NanPolicy, BadValuesAreRefusedByName) {
    const std::string run = test::temp_dir("nanbad") + "/run";
    auto r = train(flags(run, 2, 1) + " --config.train.nan_policy=retry");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.output.find("train.nan_policy must be one of halt, skip, rollback (got 'retry')"),
              std::string::npos)
        << r.output;
    r = train(flags(run, 2, 0) + " --config.train.nan_policy=rollback");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.output.find("train.nan_policy=rollback reloads the last periodic checkpoint"),
              std::string::npos)
        << r.output;
    r = train(flags(run, 2, 1) + " --config.checkpoint.on_error=ignore");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.output.find("checkpoint.on_error must be one of stop, continue"), std::string::npos)
        << r.output;
}

}  // namespace
}  // namespace meshlm

// Bad steps and failed checkpoints on several ranks (docs/reliability.md). The NaN
// (train.debug_inject_nan_step) goes into the LAST rank's gradient only, after the gradient
// reduction: at DP 2 with ZeRO 0 only that rank's own norm sees it, so the ranks agree only
// because the verdict is all-reduced. halt checkpoints exactly the uninterrupted run's state of
// the step before (DP 2, TP 2); skip leaves that step's state unchanged; rollback on 2 ranks
// trains like rollback on one process; a shard that fails to write (rank 1 only) stops every
// rank with the previous checkpoint intact, or with checkpoint.on_error=continue trains on.
#include <gtest/gtest.h>

#include <filesystem>

#include "meshlm/io/checkpoint.h"
#include "meshlm/model/transformer_layout.h"
#include "meshlm/train/full_state.h"
#include "train_runs.h"

namespace meshlm::test {
namespace {

namespace fs = std::filesystem;

std::string ckpt(const std::string& run, long step) {
    return run + "/checkpoints/step_" + std::to_string(step);
}

std::vector<float> weights(const std::string& dir) {
    std::vector<float> w(transformer_layout(tiny_model()).total());
    load_checkpoint_model(dir, tiny_model(), w.data());
    return w;
}

struct Mesh {
    const char* name;
    int data, model, stage;
};
const Mesh kMeshes[] = {{"DP 2 ZeRO 0", 2, 1, 0}, {"DP 2 ZeRO 3", 2, 1, 3}, {"TP 2", 1, 2, 0}};

TEST(NanFault, HaltCheckpointsTheStepBeforeOnEveryMesh) {
    for (const Mesh& mesh : kMeshes) {
        const std::string dir = temp_dir("mpihalt"), ref = dir + "/ref", run = dir + "/run";
        const std::string layout =
            mesh_flags(mesh.data, mesh.model, mesh.stage) + " --config.checkpoint.keep_last=10";
        auto r = run_train(2, tiny_flags(ref, 6, 2, 1, 1) + layout);
        ASSERT_EQ(r.exit_code, 0) << mesh.name << r.output;
        r = run_train(
            2, tiny_flags(run, 6, 2, 1, 2) + layout + " --config.train.debug_inject_nan_step=4");
        EXPECT_NE(r.exit_code, 0) << mesh.name << r.output;
        EXPECT_NE(r.output.find("training halted (train.nan_policy=halt): step 4: non-finite"),
                  std::string::npos)
            << mesh.name << r.output;
        EXPECT_NE(r.output.find("first non-finite tensor: gradient of "), std::string::npos)
            << mesh.name << r.output;
        EXPECT_EQ(read_file(run + "/checkpoints/latest"), "step_3\n") << mesh.name;
        EXPECT_EQ(weights(ckpt(run, 3)), weights(ckpt(ref, 3))) << mesh.name;
        EXPECT_FALSE(fs::exists(ckpt(run, 4))) << mesh.name;
    }
}

TEST(NanFault, SkipLeavesTheBadStepsStateOnEveryMesh) {
    for (const Mesh& mesh : kMeshes) {
        const std::string run = temp_dir("mpiskip") + "/run";
        auto r = run_train(2, tiny_flags(run, 5, 2, 1, 1) +
                                  mesh_flags(mesh.data, mesh.model, mesh.stage) +
                                  " --config.checkpoint.keep_last=10"
                                  " --config.train.nan_policy=skip"
                                  " --config.train.debug_inject_nan_step=3");
        ASSERT_EQ(r.exit_code, 0) << mesh.name << r.output;
        EXPECT_NE(r.output.find("update skipped (train.nan_policy=skip; 1 skipped so far)"),
                  std::string::npos)
            << mesh.name << r.output;
        const FullTrainingState s2 = read_full_state(ckpt(run, 2), tiny_model());
        const FullTrainingState s3 = read_full_state(ckpt(run, 3), tiny_model());
        EXPECT_EQ(s3.params, s2.params) << mesh.name;
        EXPECT_EQ(s3.m, s2.m) << mesh.name;
        EXPECT_EQ(s3.v, s2.v) << mesh.name;
        EXPECT_EQ(s3.step, 3) << mesh.name;
        EXPECT_NE(weights(ckpt(run, 5)), s3.params) << mesh.name;
    }
}

TEST(NanFault, RollbackOnTwoRanksTrainsAsOnOne) {
    const std::string dir = temp_dir("mpiroll");
    const std::string policy =
        " --config.train.nan_policy=rollback"
        " --config.train.rollback_skip_batches=2"
        " --config.train.debug_inject_nan_step=4";
    // One process with the global batch of two ranks: the reference.
    const TrainedRun one =
        train_run(1, dir + "/one", tiny_flags(dir + "/one", 6, 4, 1, 2) + policy, tiny_model());
    ASSERT_EQ(one.steps.size(), 4u + 4u) << one.output;  // 1-4 (4 bad), then 3-6
    for (const Mesh& mesh : kMeshes) {
        const std::string run = dir + "/" + std::to_string(mesh.data) + std::to_string(mesh.stage);
        const int batch = mesh.data == 2 ? 2 : 4;
        const TrainedRun two = train_run(2, run,
                                         tiny_flags(run, 6, batch, 1, 2) +
                                             mesh_flags(mesh.data, mesh.model, mesh.stage) + policy,
                                         tiny_model());
        EXPECT_NE(two.output.find("rolled back to " + ckpt(run, 2) + " (step 2)"),
                  std::string::npos)
            << mesh.name << two.output;
        EXPECT_EQ(two.steps.size(), one.steps.size()) << mesh.name;
        EXPECT_LE(run_distance(one, two, mesh.name).weights, 1e-5) << mesh.name;
    }
}

TEST(NanFault, AShardThatFailsToWriteFollowsOnError) {
    const std::string dir = temp_dir("mpienospc");
    const std::string layout = mesh_flags(2, 1, 1);
    const std::string fault = "MESHLM_FAULT_WRITE=ENOSPC:tmp-step_4/shard-d1-m0:2048";
    const std::string stop = dir + "/stop";
    auto r = run_train(2, tiny_flags(stop, 6, 2, 1, 2) + layout, fault);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("the checkpoint of step 4 could not be written"), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("failed on rank 1"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("No space left on device"), std::string::npos) << r.output;
    EXPECT_EQ(read_file(stop + "/checkpoints/latest"), "step_2\n");
    EXPECT_NO_THROW(read_checkpoint(ckpt(stop, 2)));
    EXPECT_FALSE(fs::exists(ckpt(stop, 4)));
    EXPECT_FALSE(fs::exists(stop + "/checkpoints/.tmp-step_4"));

    const std::string go = dir + "/continue";
    r = run_train(2, tiny_flags(go, 6, 2, 1, 2) + layout + " --config.checkpoint.on_error=continue",
                  fault);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("training continues (checkpoint.on_error=continue)"), std::string::npos)
        << r.output;
    EXPECT_EQ(read_file(go + "/checkpoints/latest"), "step_6\n");
    EXPECT_FALSE(fs::exists(ckpt(go, 4)));
    EXPECT_FALSE(fs::exists(go + "/checkpoints/.tmp-step_4"));
}

}  // namespace
}  // namespace meshlm::test

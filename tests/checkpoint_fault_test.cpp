// Checkpoints that cannot be written, through the `meshlm` binary on one process: a write that
// fails with ENOSPC or EIO at a chosen file and byte (MESHLM_FAULT_WRITE, core/write_fault.h), a
// failing `latest`, failing final weights, and a real full disk (a small tmpfs, where this
// machine lets the test mount one; skipped elsewhere). Each leaves the previous checkpoint and
// `latest` intact and no partial files, says how much space the checkpoint needed against what
// was free, and follows checkpoint.on_error (stop: exit non-zero; continue: train on and write
// the next one). (tests/mpi/nan_fault_test.cpp: the sharded writer on 2 ranks.)
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "meshlm/io/checkpoint.h"
#include "test_util.h"

namespace meshlm {
namespace {

namespace fs = std::filesystem;

// A tiny GPT-2 (configs/tiny-gpt2.yaml's architecture; `meshlm train` without --config trains
// the default run's Transformer-VQ): the checkpoint sizes below are its.
std::string flags(const std::string& dir, int steps, int interval) {
    return " --config " + test::source_dir() + "/configs/tiny-gpt2.yaml" +
           " --config.data.synthetic=true --config.model.n_layer=2 --config.model.d_model=32"
           " --config.model.n_head=2 --config.model.vocab_size=300 --config.model.max_seq_len=16"
           " --config.train.seq_len=16 --config.train.batch_size=2 --config.train.threads=1"
           " --config.train.precision=fp32 --config.train.peak_gflops=100"
           " --config.log.interval=1 --config.log.sample_tokens=0 --config.train.steps=" +
           std::to_string(steps) + " --config.checkpoint.interval=" + std::to_string(interval) +
           " --config.log.dir=" + dir;
}

test::CommandResult train(const std::string& env, const std::string& args) {
    return test::run_command("env " + env + " " + test::meshlm_binary() + " train" + args);
}

std::string latest(const std::string& run) {
    return test::read_file(run + "/checkpoints/latest");
}

// No staging directory or temporary file is left anywhere under the run.
void expect_no_partial_files(const std::string& run) {
    for (const auto& e : fs::recursive_directory_iterator(run)) {
        const std::string name = e.path().filename().string();
        EXPECT_EQ(name.rfind(".tmp-", 0), std::string::npos) << e.path();
        EXPECT_EQ(name.find(".tmp"), std::string::npos) << e.path();
    }
}

// The message names the cause and the bytes needed and free.
void expect_space_message(const std::string& out, long step, const std::string& cause) {
    EXPECT_NE(
        out.find("the checkpoint of step " + std::to_string(step) + " could not be written: "),
        std::string::npos)
        << out;
    EXPECT_NE(out.find(cause), std::string::npos) << out;
    EXPECT_TRUE(std::regex_search(out, std::regex("it needs about [0-9.]+ KiB \\([0-9]+ bytes\\) "
                                                  "and .*/checkpoints has .* \\([0-9]+ bytes\\) "
                                                  "free")))
        << out;
    EXPECT_NE(out.find("the partial files were removed"), std::string::npos) << out;
}

TEST(CheckpointFault, NoSpaceStopsAndKeepsThePreviousCheckpoint) {
    const std::string run = test::temp_dir("enospc") + "/run";
    // The optimizer file of step 4 fails after 1000 bytes, as a disk that fills up.
    auto r = train("MESHLM_FAULT_WRITE=ENOSPC:tmp-step_4/optimizer:1000", flags(run, 6, 2));
    EXPECT_EQ(r.exit_code, 1) << r.output;
    expect_space_message(r.output, 4, "No space left on device");
    EXPECT_NE(
        r.output.find(run + "/checkpoints/step_2 and " + run + "/checkpoints/latest are intact"),
        std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("checkpoint.on_error=stop"), std::string::npos) << r.output;
    EXPECT_EQ(latest(run), "step_2\n");
    EXPECT_NO_THROW(read_checkpoint(run + "/checkpoints/step_2"));  // sizes and CRC-32s
    EXPECT_FALSE(fs::exists(run + "/checkpoints/step_4"));
    EXPECT_FALSE(fs::exists(run + "/model.safetensors"));
    expect_no_partial_files(run);
}

TEST(CheckpointFault, IoErrorWithContinueTrainsOnAndWritesTheNextOne) {
    const std::string dir = test::temp_dir("eio"), ref = dir + "/ref", run = dir + "/run";
    ASSERT_EQ(train("", flags(ref, 6, 2)).exit_code, 0);
    auto r = train("MESHLM_FAULT_WRITE=EIO:tmp-step_4/model",
                   flags(run, 6, 2) + " --config.checkpoint.on_error=continue");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_space_message(r.output, 4, "Input/output error");
    EXPECT_NE(r.output.find("warning: the checkpoint of step 4"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("training continues (checkpoint.on_error=continue) and tries again "
                            "at step 6"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(latest(run), "step_6\n");
    EXPECT_FALSE(fs::exists(run + "/checkpoints/step_4"));
    expect_no_partial_files(run);
    // The failed write changed nothing in the training.
    EXPECT_EQ(test::read_file(run + "/model.safetensors"),
              test::read_file(ref + "/model.safetensors"));
}

TEST(CheckpointFault, AFailedLatestLeavesThePreviousOne) {
    const std::string run = test::temp_dir("latest") + "/run";
    ASSERT_EQ(train("", flags(run, 2, 2)).exit_code, 0);
    auto r = train("MESHLM_FAULT_WRITE=ENOSPC:checkpoints/latest",
                   " --resume " + run + " --config.train.steps=4");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("the checkpoint of step 4 could not be written"), std::string::npos)
        << r.output;
    EXPECT_EQ(latest(run), "step_2\n");
    EXPECT_FALSE(fs::exists(run + "/checkpoints/step_4"));
    expect_no_partial_files(run);
}

TEST(CheckpointFault, FinalWeightsAreNeverHalfWritten) {
    const std::string run = test::temp_dir("final") + "/run";
    // run/model.safetensors only (a checkpoint's is .../step_N/model.safetensors).
    auto r = train("MESHLM_FAULT_WRITE=ENOSPC:run/model.safetensors:4096", flags(run, 2, 2));
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("No space left on device"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(run + "/model.safetensors"));
    EXPECT_EQ(latest(run), "step_2\n");
    expect_no_partial_files(run);
}

// A small tmpfs as the run's disk: root and a kernel that allows the mount, else skipped.
class TmpfsRun : public ::testing::Test {
  protected:
    void TearDown() override {
        if (mounted_) test::run_command("umount " + mnt_);
    }
    bool mount(std::size_t bytes) {
        mnt_ = test::temp_dir("tmpfs");
        mounted_ = test::run_command("mount -t tmpfs -o size=" + std::to_string(bytes) + " tmpfs " +
                                     mnt_ + " 2>&1")
                       .exit_code == 0;
        return mounted_;
    }
    std::string mnt_;
    bool mounted_ = false;
};

std::uintmax_t dir_bytes(const std::string& dir) {
    std::uintmax_t n = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file()) n += e.file_size();
    return n;
}

TEST_F(TmpfsRun, AFullDiskFollowsOnError) {
    // How big a checkpoint is, measured on the ordinary disk.
    const std::string probe = test::temp_dir("probe") + "/run";
    ASSERT_EQ(train("", flags(probe, 2, 2)).exit_code, 0);
    const std::uintmax_t ckpt = dir_bytes(probe + "/checkpoints/step_2");
    // Room for one checkpoint and a half: the first fits, the second (written before the first
    // is rotated away) does not; the final weights (a third of a checkpoint) still fit.
    if (!mount(ckpt * 3 / 2 + 64 * 1024)) GTEST_SKIP() << "cannot mount a tmpfs here";
    for (const std::string policy : {"continue", "stop"}) {
        const std::string run = mnt_ + "/" + policy;
        auto r = train("", flags(run, 4, 2) + " --config.checkpoint.keep_last=1" +
                               " --config.checkpoint.on_error=" + policy);
        if (policy == "continue") {
            EXPECT_EQ(r.exit_code, 0) << r.output;
            EXPECT_TRUE(fs::exists(run + "/model.safetensors")) << r.output;
        } else {
            EXPECT_EQ(r.exit_code, 1) << r.output;
            EXPECT_FALSE(fs::exists(run + "/model.safetensors"));
        }
        expect_space_message(r.output, 4, "No space left on device");
        EXPECT_EQ(latest(run), "step_2\n") << r.output;
        EXPECT_NO_THROW(read_checkpoint(run + "/checkpoints/step_2"));
        expect_no_partial_files(run);
        fs::remove_all(run);
    }
}

}  // namespace
}  // namespace meshlm

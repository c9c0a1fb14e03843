// A multi-rank run stops and resumes as the README says: SIGINT to the ranks (what srun and
// scancel deliver; a terminal's Ctrl-C reaches them too) makes every rank finish its step, write
// the checkpoint and exit 0, so mpirun exits 0; the printed resume command works as printed,
// and the checkpoint also resumes on one process (the layout comes from the launch, not from
// the checkpoint's saved config). checkpoint.resume=auto continues a tensor-parallel run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <thread>

#include "process_util.h"
#include "train_runs.h"

namespace meshlm::test {
namespace {

namespace fs = std::filesystem;

TEST(StopResume, SigintOnTwoRanksCheckpointsExitsZeroAndThePrintedCommandResumes) {
    const std::string dir = temp_dir("stop"), run = dir + "/run", log = dir + "/log";
    const std::string flags = tiny_flags(run, 1000000, 2, 1, 0) + mesh_flags(2, 1, 0);
    const pid_t mpirun =
        test::spawn_logged("env MESHLM_COMM_TIMEOUT=60 " + std::string(MESHLM_MPIRUN) + " -np 2 " +
                               MESHLM_BINARY + " train" + flags,
                           log);
    ASSERT_GT(mpirun, 0);
    ASSERT_TRUE(wait_for([&] { return read_file(run + "/metrics.jsonl").size() > 200; }, 60))
        << read_file(log);
    const auto ranks = children_of(mpirun);
    ASSERT_EQ(ranks.size(), 2u) << read_file(log);
    for (pid_t r : ranks) kill(r, SIGINT);
    int status = 0;
    waitpid(mpirun, &status, 0);
    const std::string out = read_file(log);
    ASSERT_TRUE(WIFEXITED(status)) << out;
    EXPECT_EQ(WEXITSTATUS(status), 0) << out;
    EXPECT_NE(out.find("received SIGINT"), std::string::npos) << out;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(out, m, std::regex("resume with: (.*)\n"))) << out;
    const std::string printed = m[1];
    // The mpirun line that was used (its flags included) and the binary's real path.
    const std::string binary = fs::canonical(MESHLM_BINARY).string();
    EXPECT_EQ(printed, std::string(MESHLM_MPIRUN) + " -np 2 " + binary + " train --resume " + run);
    ASSERT_TRUE(fs::exists(run + "/checkpoints/latest"));

    // The printed command, as printed, from another directory, with a few more steps.
    const long stopped = std::stol(read_file(run + "/checkpoints/latest").substr(5));
    const std::string more = " --config.train.steps=" + std::to_string(stopped + 2);
    auto r = run_command("cd / && timeout 120 env MESHLM_COMM_TIMEOUT=60 " + printed + more);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("resuming from"), std::string::npos) << r.output;
    const std::string cmd = " --resume " + run;
    // And on one process: the saved parallel.data=2 does not hold it back.
    r = run_train(1, cmd + " --config.train.steps=" + std::to_string(stopped + 4));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("step " + std::string(6 - std::to_string(stopped + 4).size(), ' ') +
                            std::to_string(stopped + 4)),
              std::string::npos)
        << r.output;
}

TEST(StopResume, AutoResumeContinuesATensorParallelCheckpoint) {
    const std::string dir = temp_dir("autotp"), run = dir + "/run";
    const std::string common = mesh_flags(1, 2, 0) + " --config.checkpoint.resume=auto";
    auto r = run_train(2, tiny_flags(run, 4, 2, 1, 2) + common);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = run_train(2, tiny_flags(run, 6, 2, 1, 2) + common);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("checkpoint.resume=auto: continuing from"), std::string::npos)
        << r.output;
    EXPECT_TRUE(fs::exists(run + "/checkpoints/step_6"));
    // Another launch, no parallel.* given: the layout comes from the launch (2 ranks: data 2),
    // then one process.
    r = run_train(2, tiny_flags(run, 8, 2, 1, 2) + " --config.checkpoint.resume=auto");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("continuing from " + run + "/checkpoints/step_6"), std::string::npos)
        << r.output;
    r = run_train(1, tiny_flags(run, 10, 2, 1, 2) + " --config.checkpoint.resume=auto");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(fs::exists(run + "/checkpoints/step_10"));
}

}  // namespace
}  // namespace meshlm::test

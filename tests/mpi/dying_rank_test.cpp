// A rank killed with SIGKILL (parallel/peer_watch.h): mid-step, mid-collective and mid-checkpoint
// on 2 and 4 ranks, every other rank ends within 30 s, each with one line naming the lost rank,
// what it was doing and the step; the previous checkpoint and `latest` are intact, and resuming
// from them (on the same layout, and on another) ends bitwise where an uninterrupted run does.
// The moments are made exact with injected hangs (MESHLM_FAULT_KIND=hang): the victim, or a
// rank that holds the others back, stops at a known point and the test kills the victim there.
// Then a kill storm: 20 SIGKILLs of a random rank of a 2-rank ZeRO-3 run at random moments,
// each followed by the same command with checkpoint.resume=auto.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "process_util.h"
#include "train_runs.h"

namespace meshlm::test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kSteps = 10, kInterval = 4;

// A DP run of `np` ranks (ZeRO `stage`), 2 rows per rank, into `dir`.
std::string flags(const std::string& dir, int np, int stage, int steps = kSteps,
                  int interval = kInterval) {
    return tiny_flags(dir, steps, 2, 1, interval) + mesh_flags(np, 1, stage);
}

std::string launch(int np, const std::string& flags, const std::string& env) {
    return "env OMP_WAIT_POLICY=PASSIVE MESHLM_COMM_TIMEOUT=60 " + env + " " +
           std::string(MESHLM_MPIRUN) + " -np " + std::to_string(np) + " " + MESHLM_BINARY +
           " train" + flags;
}

// The ranks' pids by world rank, once all `np` have started (empty if mpirun ended first).
std::map<int, pid_t> rank_pids(Child& mpirun, int np) {
    std::map<int, pid_t> pids;
    wait_for(
        [&] {
            pids.clear();
            for (pid_t p : children_of(mpirun.pid))
                if (const int r = mpi_rank_of(p); r >= 0) pids[r] = p;
            return static_cast<int>(pids.size()) == np || mpirun.exited();
        },
        60);
    return pids;
}

struct Ending {
    double ranks_s = 0;   // from the kill to the end of the last rank
    double mpirun_s = 0;  // from the kill to mpirun's exit
    int status = 0;       // mpirun's
    std::string output;
};

// SIGKILLs the rank `victim` of `pids`, then waits (at most 60 s) for every other rank and
// mpirun to end.
Ending kill_rank(Child& mpirun, const std::map<int, pid_t>& pids, int victim,
                 const std::string& log) {
    const auto t0 = Clock::now();
    auto since = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
    kill(pids.at(victim), SIGKILL);
    Ending e;
    for (const auto& [r, pid] : pids) {
        const pid_t p = pid;
        while (!process_ended(p) && since() < 60)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    e.ranks_s = since();
    wait_for([&] { return mpirun.exited(); }, 60);
    e.mpirun_s = since();
    mpirun.kill_and_wait();
    e.status = mpirun.status;
    e.output = read_file(log);
    return e;
}

// What each rank but `victim` must have said: "error: rank R/N: lost rank V (pid P on H): ...
// while this rank was in WHAT". `what[r]` is a regex for rank r's activity.
void expect_loss_reported(const Ending& e, int np, int victim, pid_t victim_pid,
                          const std::map<int, std::string>& what) {
    EXPECT_LT(e.ranks_s, 30) << e.output;
    EXPECT_LT(e.mpirun_s, 30) << e.output;
    EXPECT_FALSE(WIFEXITED(e.status) && WEXITSTATUS(e.status) == 0) << e.output;
    std::printf("lost rank %d of %d: every rank ended %.3f s after the SIGKILL, mpirun %.2f s\n",
                victim, np, e.ranks_s, e.mpirun_s);
    for (int r = 0; r < np; ++r) {
        if (r == victim) continue;
        const std::regex line("error: rank " + std::to_string(r) + "/" + std::to_string(np) +
                              ": lost rank " + std::to_string(victim) + " \\(pid " +
                              std::to_string(victim_pid) +
                              " on [^)]+\\): its process ended[^\n]* while this rank was in " +
                              what.at(r) + "; the job cannot go on");
        EXPECT_TRUE(std::regex_search(e.output, line)) << "rank " << r << "\n" << e.output;
    }
}

// Step -> loss of a run's metrics.jsonl, compared exactly.
std::map<long, double> losses(const std::string& run) {
    std::map<long, double> out;
    std::istringstream in(read_file(run + "/metrics.jsonl"));
    for (std::string line; std::getline(in, line);) {
        const auto j = nlohmann::json::parse(line);
        if (j.contains("loss")) out[j["step"].get<long>()] = j["loss"].get<double>();
    }
    return out;
}

void expect_same_run(const std::string& ref, const std::string& got, const std::string& what) {
    EXPECT_EQ(losses(got), losses(ref)) << what;
    EXPECT_EQ(read_file(got + "/model.safetensors"), read_file(ref + "/model.safetensors"))
        << what << ": the final weights differ";
}

// Where a run of `np` ranks resumes on another layout, keeping the global batch: 2 ranks on
// one process, 4 ranks on 2 at ZeRO stage 3.
std::string other_layout(int np) {
    return np == 2 ? mesh_flags(1, 1, 0) + " --config.train.batch_size=4"
                   : mesh_flags(2, 1, 3) + " --config.train.batch_size=4";
}

// A rank lost at one moment: `fault` holds a rank at a known point (it prints `held` there),
// then `victim` is killed. `what[r]`: what rank r was doing, as its message says it.
struct Moment {
    std::string name;
    int np, victim;
    std::string fault, held;
    std::map<int, std::string> what;
    long latest = 4;  // the checkpoint the run resumes from (0: none yet)
};

class DyingRank : public ::testing::Test {
  protected:
    static void SetUpTestSuite() { dir_ = new std::string(temp_dir("dying_rank")); }
    // The uninterrupted run of `np` ranks at ZeRO stage 0 (trained once, then reused), and
    // that run resumed from its step-4 checkpoint on other_layout(np).
    static std::string reference(int np, bool other) {
        const std::string dir = *dir_ + "/ref" + std::to_string(np), moved = dir + "-other";
        if (!fs::exists(dir + "/model.safetensors")) {
            auto r = run_train(np, flags(dir, np, 0));
            EXPECT_EQ(r.exit_code, 0) << r.output;
        }
        if (other && !fs::exists(moved + "/model.safetensors")) {
            auto r =
                run_train(np == 2 ? 1 : 2, " --resume " + dir + "/checkpoints/step_4" +
                                               other_layout(np) + " --config.log.dir=" + moved);
            EXPECT_EQ(r.exit_code, 0) << r.output;
        }
        return other ? moved : dir;
    }
    void kill_at(const Moment& m);
    static std::string* dir_;
};
std::string* DyingRank::dir_ = nullptr;

void DyingRank::kill_at(const Moment& m) {
    const std::string run = *dir_ + "/" + m.name, log = run + ".log";
    Child mpirun{spawn_logged(launch(m.np, flags(run, m.np, 0), m.fault), log)};
    ASSERT_GT(mpirun.pid, 0);
    auto pids = rank_pids(mpirun, m.np);
    ASSERT_EQ(static_cast<int>(pids.size()), m.np) << read_file(log);
    ASSERT_TRUE(wait_for([&] { return read_file(log).find(m.held) != std::string::npos; }, 60))
        << read_file(log);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the others reach a wait
    const Ending e = kill_rank(mpirun, pids, m.victim, log);
    expect_loss_reported(e, m.np, m.victim, pids[m.victim], m.what);
    // The previous checkpoint is intact and still the latest; the one cut short never appeared.
    EXPECT_EQ(latest_checkpoint_step(run), m.latest) << e.output;
    EXPECT_FALSE(fs::exists(run + "/checkpoints/step_8"));
    const std::string ckpt = run + "/checkpoints/step_" + std::to_string(m.latest);

    // On another layout, from that checkpoint: as the uninterrupted run resumed there.
    if (m.latest == 4) {
        const std::string moved = run + "-other";
        auto r = run_train(m.np == 2 ? 1 : 2,
                           " --resume " + ckpt + other_layout(m.np) + " --config.log.dir=" + moved);
        ASSERT_EQ(r.exit_code, 0) << r.output;
        expect_same_run(reference(m.np, true), moved, m.name + " resumed on another layout");
    }
    // The same command again (what a scheduler requeues): the uninterrupted run, bitwise.
    auto r = run_train(m.np, flags(run, m.np, 0) + " --config.checkpoint.resume=auto");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // (Killed before its run directory was written, a run simply starts.)
    if (m.latest > 0)
        EXPECT_NE(r.output.find("continuing from " + ckpt), std::string::npos) << r.output;
    expect_same_run(reference(m.np, false), run, m.name + " resumed");
}

std::string hang(int rank, const std::string& at) {
    return "MESHLM_FAULT_RANK=" + std::to_string(rank) + " MESHLM_FAULT_AT=" + at +
           " MESHLM_FAULT_KIND=hang";
}
std::string held(int rank, const std::string& at) {
    return "fault: rank " + std::to_string(rank) + " hangs at " + at;
}

// The victim is stopped inside step 7, before its collectives; the others wait for it there.
TEST_F(DyingRank, MidStep) {
    const std::string at = "train_step:7", waiting = "all_reduce in training step 7";
    kill_at({"step2", 2, 1, hang(1, at), held(1, at), {{0, waiting}}});
    kill_at({"step4", 4, 2, hang(2, at), held(2, at), {{0, waiting}, {1, waiting}, {3, waiting}}});
}

// The victim is blocked in step 7's first all-reduce: another rank holds the others back.
// On 4 ranks the victim is rank 0, which the others' links go to.
TEST_F(DyingRank, MidCollective) {
    const std::string at = "train_step:7", waiting = "all_reduce in training step 7";
    kill_at({"collective2", 2, 1, hang(0, at), held(0, at), {{0, "training step 7"}}});
    kill_at({"collective4",
             4,
             0,
             hang(1, at),
             held(1, at),
             {{1, "training step 7"}, {2, waiting}, {3, waiting}}});
}

// The victim is stopped while it writes its shard of the step-8 checkpoint; the others have
// written theirs and wait for it.
TEST_F(DyingRank, MidCheckpoint) {
    const std::string at = "checkpoint_shard:8",
                      waiting = "all_reduce in checkpoint write \\(step 8\\)";
    kill_at({"ckpt2", 2, 1, hang(1, at), held(1, at), {{0, waiting}}});
    kill_at({"ckpt4", 4, 3, hang(3, at), held(3, at), {{0, waiting}, {1, waiting}, {2, waiting}}});
}

// Outside the training loop, where a SIGTERM is not a graceful stop: rank 0 waits in a start-up
// all-reduce when rank 1 dies, and mpirun's SIGTERM must not end it before it says why.
TEST_F(DyingRank, InStartUp) {
    kill_at({"start2",
             2,
             1,
             hang(1, "train_start"),
             held(1, "train_start"),
             {{0, "all_reduce in start-up"}},
             0});
}

// 20 SIGKILLs of a random rank at seeded-random moments (from start-up on; in a step, a
// collective or a checkpoint), each followed by the same command with checkpoint.resume=auto,
// then a run to the end: the final weights and every logged loss are the uninterrupted run's.
TEST_F(DyingRank, AKillStormOverAZero3RunEndsAsTheUninterruptedRun) {
    constexpr int kStormSteps = 80;  // room for 20 kills at a few steps each on a fast machine
    const std::string ref = *dir_ + "/storm_ref", run = *dir_ + "/storm";
    auto r = run_train(2, flags(ref, 2, 3, kStormSteps, 2));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string cmd =
        launch(2, flags(run, 2, 3, kStormSteps, 2) + " --config.checkpoint.resume=auto", "");
    std::mt19937 rng(20240612);
    int reported = 0, in_training = 0;
    double slowest = 0;
    for (int n = 0; n < 20; ++n) {
        const std::string log = run + std::to_string(n) + ".log";
        const long from = latest_checkpoint_step(run);
        Child mpirun{spawn_logged(cmd, log)};
        ASSERT_GT(mpirun.pid, 0);
        // As in checkpoint_test's storm: k = 0, a random time in start-up; else a random
        // fraction of a step after step from + k. Never near the end: the storm never finishes
        // (8 steps of margin: on a fast machine a few more steps end between aim and kill).
        long k = static_cast<long>(rng() % (n < 5 ? 2 : 6));
        if (from + k > kStormSteps - 8) k = 0;
        const int victim = static_cast<int>(rng() % 2);
        const auto deadline = Clock::now() + (k == 0 ? std::chrono::milliseconds(rng() % 300)
                                                     : std::chrono::milliseconds(60000));
        while (last_step_logged(log) < from + std::max(k, 1L) && !mpirun.exited() &&
               Clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (k > 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 10000));
        const auto pids = rank_pids(mpirun, 2);
        ASSERT_FALSE(mpirun.exited()) << "not killed: the run ended\n" << read_file(log);
        ASSERT_EQ(pids.size(), 2u) << read_file(log);
        const bool training = last_step_logged(log) > 0;  // the watch is up by then
        const Ending e = kill_rank(mpirun, pids, victim, log);
        EXPECT_LT(e.ranks_s, 30) << e.output;
        EXPECT_LT(e.mpirun_s, 30) << e.output;
        slowest = std::max(slowest, e.ranks_s);
        const bool said = e.output.find("lost rank " + std::to_string(victim) + " (pid " +
                                        std::to_string(pids.at(victim))) != std::string::npos;
        EXPECT_TRUE(said || !training) << "kill " << n << " not reported\n" << e.output;
        reported += said;
        in_training += training;
    }
    std::printf(
        "storm: %d of 20 losses reported by the other rank (%d kills in training, the "
        "others in start-up); every rank ended at most %.2f s after its kill\n",
        reported, in_training, slowest);
    ASSERT_LT(latest_checkpoint_step(run), kStormSteps) << "the storm finished the run";
    r = run_command(cmd + " < /dev/null");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_GE(in_training, 10);
    expect_same_run(ref, run, "after the storm");
}

}  // namespace
}  // namespace meshlm::test

// Checkpoints end to end through the `meshlm` binary: exact resume (bitwise-identical losses and
// final weights), SIGINT / SIGTERM, a kill in the middle of a checkpoint write, damaged files,
// rotation, checkpoint.resume=auto (also after a kill before the first checkpoint, and through a
// storm of kills), model.init_from, and checkpoints opened by sample / eval.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "meshlm/io/safetensors.h"
#include "process_util.h"
#include "test_util.h"

namespace meshlm {
namespace {

namespace fs = std::filesystem;

// A tiny model on real text (so the data loader's state matters), gradient accumulation on: a
// GPT-2 (configs/tiny-gpt2.yaml's architecture; `meshlm train` without --config trains the
// default run's Transformer-VQ, which has no Hugging Face export).
std::string tiny_flags(const std::string& corpus, const std::string& cache) {
    return " --config " + test::source_dir() + "/configs/tiny-gpt2.yaml" +
           " --config.model.n_layer=2 --config.model.d_model=32 --config.model.n_head=2"
           " --config.model.max_seq_len=32 --config.train.seq_len=32 --config.train.batch_size=4"
           " --config.train.grad_accum=2 --config.train.threads=2 --config.train.peak_gflops=100"
           " --config.log.interval=1 --config.log.eval_interval=4 --config.train.eval_batches=2"
           " --config.log.sample_tokens=0 --config.data.path=" +
           corpus + " --config.data.cache_dir=" + cache;
}

// step -> the metrics line's loss text, exactly as written.
std::map<long, std::string> losses(const std::string& metrics_path) {
    std::map<long, std::string> out;
    std::istringstream in(test::read_file(metrics_path));
    std::regex re("\"step\": ([0-9]+), \"loss\": ([^,}]+)");
    std::smatch m;
    for (std::string line; std::getline(in, line);)
        if (std::regex_search(line, m, re)) out[std::stol(m[1])] = m[2];
    return out;
}

std::string first_line(const std::string& path) {
    std::istringstream in(test::read_file(path));
    std::string line;
    std::getline(in, line);
    return line;
}

class Checkpoint : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = test::temp_dir("ckpt");
        flags_ = tiny_flags(test::write_test_corpus(dir_), dir_ + "/cache");
    }
    test::CommandResult train(const std::string& extra) {
        return test::run_command(test::meshlm_binary() + " train" + flags_ + " " + extra);
    }
    std::string dir_, flags_;
};

TEST_F(Checkpoint, ResumedRunIsBitwiseIdentical) {
    const std::string a = dir_ + "/a", b = dir_ + "/b";
    auto full =
        train("--config.train.steps=16 --config.checkpoint.interval=8 --config.log.dir=" + a);
    ASSERT_EQ(full.exit_code, 0) << full.output;
    ASSERT_TRUE(fs::exists(a + "/checkpoints/step_8/trainer.json"));
    EXPECT_EQ(first_line(a + "/checkpoints/latest"), "step_16");

    auto resumed = test::run_command(test::meshlm_binary() + " train --resume " + a +
                                     "/checkpoints/step_8 --config.log.dir=" + b);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("resuming from"), std::string::npos);
    auto la = losses(a + "/metrics.jsonl"), lb = losses(b + "/metrics.jsonl");
    ASSERT_EQ(la.size(), 16u);
    ASSERT_EQ(lb.size(), 8u);  // steps 9..16 only
    for (long s = 9; s <= 16; ++s) EXPECT_EQ(la[s], lb[s]) << "step " << s;
    EXPECT_EQ(test::read_file(a + "/model.safetensors"), test::read_file(b + "/model.safetensors"));
    EXPECT_EQ(test::read_file(a + "/checkpoints/step_16/optimizer.safetensors"),
              test::read_file(b + "/checkpoints/step_16/optimizer.safetensors"));
    // The check can fail: a fresh run with another seed differs from step 9 on.
    auto other =
        train("--config.train.steps=16 --config.train.seed=5 --config.log.dir=" + dir_ + "/c");
    ASSERT_EQ(other.exit_code, 0) << other.output;
    EXPECT_NE(losses(dir_ + "/c/metrics.jsonl")[9], la[9]);
}

// Lion's state is one momentum per parameter: its checkpoints hold exp_avg only, resume
// bitwise, and refuse to be continued by another optimizer.
TEST_F(Checkpoint, LionResumesBitwiseAndOnlyUnderLion) {
    const std::string a = dir_ + "/a", b = dir_ + "/b";
    const std::string lion = " --config.optim.name=lion --config.optim.lr=3e-4";
    auto full = train(
        "--config.train.steps=12 --config.checkpoint.interval=6 --config.log.dir=" + a + lion);
    ASSERT_EQ(full.exit_code, 0) << full.output;
    SafetensorsFile opt(a + "/checkpoints/step_6/optimizer.safetensors");
    EXPECT_TRUE(opt.has("exp_avg.wte.weight"));
    EXPECT_FALSE(opt.has("exp_avg_sq.wte.weight"));
    auto resumed = test::run_command(test::meshlm_binary() + " train --resume " + a +
                                     "/checkpoints/step_6 --config.log.dir=" + b);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    auto la = losses(a + "/metrics.jsonl"), lb = losses(b + "/metrics.jsonl");
    ASSERT_EQ(lb.size(), 6u);
    for (long s = 7; s <= 12; ++s) EXPECT_EQ(la[s], lb[s]) << "step " << s;
    EXPECT_EQ(test::read_file(a + "/model.safetensors"), test::read_file(b + "/model.safetensors"));
    // Lion trains differently from AdamW at the same settings (the check can fail).
    auto adamw =
        train("--config.train.steps=12 --config.optim.lr=3e-4 --config.log.dir=" + dir_ + "/c");
    ASSERT_EQ(adamw.exit_code, 0) << adamw.output;
    EXPECT_NE(losses(dir_ + "/c/metrics.jsonl")[12], la[12]);

    auto other = test::run_command(test::meshlm_binary() + " train --resume " + a +
                                   "/checkpoints/step_6 --config.optim.name=adamw"
                                   " --config.log.dir=" +
                                   dir_ + "/d");
    EXPECT_EQ(other.exit_code, 2) << other.output;
    EXPECT_NE(other.output.find("holds lion's optimizer state; optim.name=adamw cannot continue"),
              std::string::npos)
        << other.output;
    EXPECT_FALSE(fs::exists(dir_ + "/d"));
}

// Adafactor's state: full second moments of the vectors (exp_avg_sq), row and column statistics
// of the matrices (factored from 32 up here), no first moment. A resume continues bitwise; another
// optimizer or other factoring is refused.
TEST_F(Checkpoint, AdafactorResumesBitwiseAndOnlyAsFactored) {
    const std::string a = dir_ + "/a", b = dir_ + "/b";
    const std::string af =
        " --config.optim.name=adafactor --config.optim.lr=1e-2"
        " --config.optim.adafactor_min_dim_size_to_factor=32";
    auto full =
        train("--config.train.steps=12 --config.checkpoint.interval=6 --config.log.dir=" + a + af);
    ASSERT_EQ(full.exit_code, 0) << full.output;
    SafetensorsFile opt(a + "/checkpoints/step_6/optimizer.safetensors");
    EXPECT_FALSE(opt.has("exp_avg.wte.weight"));
    EXPECT_FALSE(opt.has("exp_avg_sq.wte.weight"));
    SafetensorsFile weights(a + "/checkpoints/step_6/model.safetensors");
    const Shape wte = weights.entry("wte.weight").shape;
    EXPECT_EQ(opt.entry("exp_avg_sq_row.wte.weight").shape, Shape{wte[0]});
    EXPECT_EQ(opt.entry("exp_avg_sq_col.wte.weight").shape, Shape{32});
    EXPECT_TRUE(opt.has("exp_avg_sq.ln_f.weight"));
    auto resumed = test::run_command(test::meshlm_binary() + " train --resume " + a +
                                     "/checkpoints/step_6 --config.log.dir=" + b);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    auto la = losses(a + "/metrics.jsonl"), lb = losses(b + "/metrics.jsonl");
    ASSERT_EQ(lb.size(), 6u);
    for (long s = 7; s <= 12; ++s) EXPECT_EQ(la[s], lb[s]) << "step " << s;
    EXPECT_EQ(test::read_file(a + "/model.safetensors"), test::read_file(b + "/model.safetensors"));

    const std::string resume =
        test::meshlm_binary() + " train --resume " + a + "/checkpoints/step_6";
    auto other =
        test::run_command(resume + " --config.optim.name=lion --config.log.dir=" + dir_ + "/c");
    EXPECT_EQ(other.exit_code, 2) << other.output;
    EXPECT_NE(
        other.output.find("holds adafactor's optimizer state; optim.name=lion cannot continue"),
        std::string::npos)
        << other.output;
    auto refactored = test::run_command(
        resume + " --config.optim.adafactor_min_dim_size_to_factor=64 --config.log.dir=" + dir_ +
        "/d");
    EXPECT_EQ(refactored.exit_code, 2) << refactored.output;
    EXPECT_NE(refactored.output.find("optim.adafactor_min_dim_size_to_factor=32; this run asks for "
                                     "other factoring"),
              std::string::npos)
        << refactored.output;
    EXPECT_FALSE(fs::exists(dir_ + "/c"));
    EXPECT_FALSE(fs::exists(dir_ + "/d"));
}

TEST_F(Checkpoint, ResumeInPlaceDropsMetricsLoggedAfterTheCheckpoint) {
    const std::string a = dir_ + "/a";
    ASSERT_EQ(train("--config.train.steps=12 --config.checkpoint.interval=5 --config.log.dir=" + a)
                  .exit_code,
              0);
    auto before = losses(a + "/metrics.jsonl");
    auto r =
        test::run_command(test::meshlm_binary() + " train --resume " + a + "/checkpoints/step_10");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto after = losses(a + "/metrics.jsonl");
    EXPECT_EQ(before, after);  // steps 1..12 once each, 11 and 12 recomputed identically
}

TEST_F(Checkpoint, RotationKeepsTheNewestAndEveryKth) {
    const std::string a = dir_ + "/a";
    auto r = train(
        "--config.train.steps=10 --config.checkpoint.interval=2"
        " --config.checkpoint.keep_last=2 --config.checkpoint.keep_every=4"
        " --config.log.dir=" +
        a);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(a + "/checkpoints"))
        names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"latest", "step_10", "step_4", "step_8"}));
}

TEST_F(Checkpoint, OnlyBetterWritesWhenValidationImproves) {
    // A learning rate far too high makes validation worse at some checkpoint steps.
    const std::string a = dir_ + "/a";
    auto r = train(
        "--config.train.steps=24 --config.checkpoint.interval=2"
        " --config.checkpoint.keep_last=100 --config.checkpoint.only_better=true"
        " --config.optim.lr=0.05 --config.optim.warmup_steps=0"
        " --config.log.dir=" +
        a);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::regex best_re("\"best_val_loss\": ([0-9.eE+-]+)");
    double previous = 1e30;
    int written = 0;
    for (int step = 2; step <= 24; step += 2) {
        const std::string trainer =
            test::read_file(a + "/checkpoints/step_" + std::to_string(step) + "/trainer.json");
        const bool skipped =
            r.output.find("step " + std::string(step < 10 ? "     " : "    ") +
                          std::to_string(step) + "/24 | no checkpoint") != std::string::npos;
        EXPECT_EQ(trainer.empty(), skipped) << "step " << step << "\n" << r.output;
        if (trainer.empty()) continue;
        std::smatch m;
        ASSERT_TRUE(std::regex_search(trainer, m, best_re)) << trainer;
        EXPECT_LT(std::stod(m[1]), previous) << "step " << step;  // strictly improving
        previous = std::stod(m[1]);
        ++written;
    }
    EXPECT_GE(written, 1);
    EXPECT_LT(written, 12) << "validation never got worse: the test proves nothing";
}

TEST_F(Checkpoint, AutoResumeContinuesTheLatestCheckpoint) {
    const std::string a = dir_ + "/a";
    const std::string common =
        "--config.checkpoint.interval=3 --config.checkpoint.resume=auto --config.log.dir=" + a;
    ASSERT_EQ(train("--config.train.steps=6 " + common).exit_code, 0);
    auto r = train("--config.train.steps=9 " + common);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("continuing from"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("step      7/9"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("step      6/9"), std::string::npos) << r.output;
    EXPECT_EQ(losses(a + "/metrics.jsonl").size(), 9u);
    EXPECT_EQ(first_line(a + "/checkpoints/latest"), "step_9");
}

// Waits until `path` holds at least `lines` lines (or 60 s pass).
bool wait_for_lines(const std::string& path, std::size_t lines) {
    for (int i = 0; i < 600; ++i) {
        const std::string text = test::read_file(path);
        if (static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) >= lines)
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
}

// The lines `path` holds (0 when it is missing).
std::size_t line_count(const std::string& path) {
    const std::string text = test::read_file(path);
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// What a preemption before the first checkpoint leaves: a run (`flags` plus train.steps and
// checkpoint.interval far off) SIGKILLed once it has logged two steps.
::testing::AssertionResult kill_before_first_checkpoint(const std::string& flags,
                                                        const std::string& run,
                                                        const std::string& log) {
    const pid_t pid =
        test::spawn_logged(test::meshlm_binary() + " train" + flags +
                               " --config.train.steps=100000"
                               " --config.checkpoint.interval=100000 --config.log.dir=" +
                               run,
                           log);
    if (pid <= 0) return ::testing::AssertionFailure() << "cannot start meshlm";
    const bool logged = wait_for_lines(run + "/metrics.jsonl", 2);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    if (!logged)
        return ::testing::AssertionFailure() << "no steps logged:\n" << test::read_file(log);
    if (!fs::exists(run + "/config.yaml") || fs::exists(run + "/checkpoints/latest"))
        return ::testing::AssertionFailure() << "not the state of a run killed early";
    return ::testing::AssertionSuccess();
}

// What a scheduler does with a preempted job: the same command again. A run killed before its
// first checkpoint left config.yaml and metrics.jsonl and nothing to resume;
// checkpoint.resume=auto starts that run again (it used to refuse: "already holds a run") and
// ends where an uninterrupted run does.
TEST_F(Checkpoint, AutoResumeRestartsARunKilledBeforeItsFirstCheckpoint) {
    const std::string a = dir_ + "/a", b = dir_ + "/b";
    const std::string common =
        "--config.train.steps=6 --config.checkpoint.interval=3 --config.checkpoint.resume=auto"
        " --config.log.dir=";
    ASSERT_TRUE(kill_before_first_checkpoint(flags_ + " --config.checkpoint.resume=auto", a,
                                             dir_ + "/log"));
    test::write_file(a + "/notes.txt", "mine");  // not a run file: kept
    auto r = train(common + a);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("checkpoint.resume=auto: " + a +
                            " holds this run, stopped before its first checkpoint"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(line_count(a + "/metrics.jsonl"), 6u);  // the killed attempt's lines are gone
    EXPECT_EQ(first_line(a + "/checkpoints/latest"), "step_6");
    EXPECT_EQ(test::read_file(a + "/notes.txt"), "mine");
    ASSERT_EQ(train(common + b).exit_code, 0);
    EXPECT_EQ(losses(a + "/metrics.jsonl"), losses(b + "/metrics.jsonl"));
    EXPECT_EQ(test::read_file(a + "/model.safetensors"), test::read_file(b + "/model.safetensors"));
}

// Only that run starts again: another model or optimizer is refused naming the key, and a
// finished run without checkpoints (its final weights) is never wiped.
TEST_F(Checkpoint, AutoResumeWithoutACheckpointRefusesAnotherRun) {
    const std::string a = dir_ + "/a", b = dir_ + "/b";
    const std::string common = "--config.train.steps=6 --config.checkpoint.resume=auto ";
    ASSERT_TRUE(kill_before_first_checkpoint(flags_, a, dir_ + "/log"));
    const std::string config = test::read_file(a + "/config.yaml"),
                      metrics = test::read_file(a + "/metrics.jsonl");
    for (const auto& [flag, key] : std::vector<std::pair<std::string, std::string>>{
             {"--config.model.d_model=64", "model.d_model: 32 in the run in " + a},
             {"--config.optim.name=lion", "holds adamw's optimizer state; optim.name=lion"}}) {
        auto r = train(common + flag + " --config.log.dir=" + a);
        EXPECT_EQ(r.exit_code, 2) << r.output;
        EXPECT_NE(r.output.find(key), std::string::npos) << key << "\n" << r.output;
        EXPECT_EQ(test::read_file(a + "/config.yaml"), config);
        EXPECT_EQ(test::read_file(a + "/metrics.jsonl"), metrics);
    }
    ASSERT_EQ(train("--config.train.steps=2 --config.checkpoint.interval=0 --config.log.dir=" + b)
                  .exit_code,
              0);
    const std::string weights = test::read_file(b + "/model.safetensors");
    auto r = train(common + "--config.checkpoint.interval=0 --config.log.dir=" + b);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(b + " holds a finished run"), std::string::npos) << r.output;
    EXPECT_EQ(test::read_file(b + "/model.safetensors"), weights);
}

// A preempted job requeued again and again: 20 SIGKILLs at seeded-random moments from the first
// step on (some before the first checkpoint, some while one is written), each followed by the
// same command with checkpoint.resume=auto, then a run to the end. Each restart continues the
// latest checkpoint, or before the first starts the run again: the final weights and every
// logged loss are an uninterrupted run's.
TEST_F(Checkpoint, AutoResumeSurvivesAKillStormFromTheFirstStep) {
    constexpr long kSteps = 30;
    const std::string ref = dir_ + "/ref", run = dir_ + "/storm";
    // One thread: on a loaded machine two spinning workers make every start many times slower.
    const std::string cmd = test::meshlm_binary() + " train" + flags_ +
                            " --config.train.steps=" + std::to_string(kSteps) +
                            " --config.checkpoint.interval=2 --config.checkpoint.resume=auto"
                            " --config.train.threads=1 --config.log.dir=";
    ASSERT_EQ(test::run_command(cmd + ref).exit_code, 0);  // (and the data cache is filled)
    std::mt19937 rng(20240611);
    int before_first = 0, restarted = 0, continued = 0;
    for (int n = 0; n < 20; ++n) {
        const std::string log = dir_ + "/storm" + std::to_string(n) + ".log";
        const long from = test::latest_checkpoint_step(run);
        test::Child child{test::spawn_logged(cmd + run, log)};
        ASSERT_GT(child.pid, 0);
        // The moment: k = 0, a random time in start-up (cut short by a first step); else just
        // after step from + k is done, a random fraction of a step later (in the next step, or
        // in the checkpoint it writes). The first five kills come at k <= 1, before the first
        // checkpoint is done. A start gains a few steps at most, and none near the end: the
        // storm never finishes the run. (The margin of 8 steps is for fast machines, where a
        // tiny step takes a millisecond and a few more end between the aim and the kill.)
        long k = static_cast<long>(rng() % (n < 5 ? 2 : 6));
        if (from + k > kSteps - 8) k = 0;
        const auto deadline =
            std::chrono::steady_clock::now() +
            (k == 0 ? std::chrono::milliseconds(rng() % 300) : std::chrono::milliseconds(60000));
        while (test::last_step_logged(log) < from + std::max(k, 1L) && !child.exited() &&
               std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (k > 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 10000));
        ASSERT_FALSE(child.exited()) << "not killed: the run ended\n" << test::read_file(log);
        child.kill_and_wait();
        const std::string out = test::read_file(log);
        restarted += out.find("stopped before its first checkpoint") != std::string::npos;
        continued += out.find("checkpoint.resume=auto: continuing from") != std::string::npos;
        before_first += test::latest_checkpoint_step(run) == 0;
    }
    ASSERT_LT(test::latest_checkpoint_step(run), kSteps) << "the storm finished the run";
    auto r = test::run_command(cmd + run);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_GE(before_first, 2);
    EXPECT_GE(restarted, 1);
    EXPECT_GE(continued, 5);
    EXPECT_EQ(losses(run + "/metrics.jsonl"), losses(ref + "/metrics.jsonl"));
    EXPECT_EQ(test::read_file(run + "/model.safetensors"),
              test::read_file(ref + "/model.safetensors"));
}

TEST_F(Checkpoint, SignalWritesACheckpointAndExitsZero) {
    for (int sig : {SIGINT, SIGTERM}) {
        const std::string a = dir_ + "/sig" + std::to_string(sig);
        pid_t pid =
            test::spawn_logged(test::meshlm_binary() + " train" + flags_ +
                                   " --config.train.steps=100000 --config.checkpoint.interval=0"
                                   " --config.log.dir=" +
                                   a,
                               dir_ + "/log");
        ASSERT_GT(pid, 0);
        ASSERT_TRUE(wait_for_lines(a + "/metrics.jsonl", 3));
        kill(pid, sig);
        int status = 0;
        waitpid(pid, &status, 0);
        const std::string out = test::read_file(dir_ + "/log");
        ASSERT_TRUE(WIFEXITED(status)) << "signal " << sig << " status " << status << "\n" << out;
        EXPECT_EQ(WEXITSTATUS(status), 0) << out;
        EXPECT_NE(out.find(sig == SIGINT ? "received SIGINT" : "received SIGTERM"),
                  std::string::npos)
            << out;
        // The checkpoint is the last completed step, and it resumes.
        const long last = losses(a + "/metrics.jsonl").rbegin()->first;
        EXPECT_EQ(first_line(a + "/checkpoints/latest"), "step_" + std::to_string(last));
        auto r = test::run_command(test::meshlm_binary() + " train --resume " + a +
                                   " --config.train.steps=" + std::to_string(last + 2));
        EXPECT_EQ(r.exit_code, 0) << r.output;
        EXPECT_NE(r.output.find(std::to_string(last + 2) + "/" + std::to_string(last + 2)),
                  std::string::npos)
            << r.output;
    }
}

TEST_F(Checkpoint, SecondSignalExitsAtOnce) {
    // Steps of ~0.3 s: the second signal lands while the first one waits for the step to end.
    // (The two are sent apart: a signal that is still pending when the same one arrives is
    // merged with it.)
    const std::string a = dir_ + "/a";
    pid_t pid = test::spawn_logged(test::meshlm_binary() + " train" + flags_ +
                                       " --config.model.d_model=128 --config.model.n_head=4"
                                       " --config.model.max_seq_len=128 --config.train.seq_len=128"
                                       " --config.train.batch_size=64 --config.train.steps=100000"
                                       " --config.checkpoint.interval=0 --config.log.dir=" +
                                       a,
                                   dir_ + "/log");
    ASSERT_GT(pid, 0);
    ASSERT_TRUE(wait_for_lines(a + "/metrics.jsonl", 2));
    kill(pid, SIGINT);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    kill(pid, SIGINT);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << test::read_file(dir_ + "/log");
    EXPECT_EQ(WTERMSIG(status), SIGINT) << test::read_file(dir_ + "/log");
    EXPECT_FALSE(fs::exists(a + "/checkpoints/latest"));
}

TEST_F(Checkpoint, KillDuringAWriteKeepsThePreviousCheckpoint) {
    const std::string a = dir_ + "/a";
    ASSERT_EQ(train("--config.train.steps=4 --config.checkpoint.interval=4 --config.log.dir=" + a)
                  .exit_code,
              0);
    const std::string model4 = test::read_file(a + "/checkpoints/step_4/model.safetensors");
    for (const char* point : {"checkpoint_files", "checkpoint_latest"}) {
        auto r =
            test::run_command(std::string("MESHLM_FAULT=") + point + " " + test::meshlm_binary() +
                              " train --resume " + a + " --config.train.steps=8");
        EXPECT_EQ(r.exit_code, 86) << point << ": " << r.output;  // killed mid-write
        EXPECT_EQ(first_line(a + "/checkpoints/latest"), "step_4") << point;
        EXPECT_EQ(test::read_file(a + "/checkpoints/step_4/model.safetensors"), model4);
    }
    // Killed after the rename but before `latest`: step_8 is complete, latest still says 4.
    EXPECT_TRUE(fs::exists(a + "/checkpoints/step_8/trainer.json"));
    auto r = test::run_command(test::meshlm_binary() + " train --resume " + a +
                               " --config.train.steps=8");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("step_4 (step 4"), std::string::npos) << r.output;
    EXPECT_EQ(first_line(a + "/checkpoints/latest"), "step_8");
    for (const auto& e : fs::directory_iterator(a + "/checkpoints"))
        EXPECT_NE(e.path().filename().string().rfind(".tmp-", 0), 0u) << e.path();
}

TEST_F(Checkpoint, DamagedCheckpointsAreRefusedNamingTheFile) {
    const std::string a = dir_ + "/a";
    ASSERT_EQ(train("--config.train.steps=2 --config.checkpoint.interval=2 --config.log.dir=" + a)
                  .exit_code,
              0);
    const std::string ck = a + "/checkpoints/step_2";
    const std::string model = test::read_file(ck + "/model.safetensors");
    auto resume = [&] {
        return test::run_command(test::meshlm_binary() + " train --resume " + ck +
                                 " --config.train.steps=4");
    };
    // Truncated.
    test::write_file(ck + "/model.safetensors", model.substr(0, model.size() / 2));
    auto r = resume();
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("model.safetensors has " + std::to_string(model.size() / 2) + " bytes"),
              std::string::npos)
        << r.output;
    // Same size, one byte flipped.
    std::string flipped = model;
    flipped[flipped.size() - 3] ^= 0x40;
    test::write_file(ck + "/model.safetensors", flipped);
    r = resume();
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("model.safetensors has CRC-32"), std::string::npos) << r.output;
    // A foreign trainer.json.
    test::write_file(ck + "/model.safetensors", model);
    const std::string trainer = test::read_file(ck + "/trainer.json");
    test::write_file(ck + "/trainer.json", "{\"format\": \"something-else\"}");
    r = resume();
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("has format \"something-else\""), std::string::npos) << r.output;
    test::write_file(ck + "/trainer.json", "{not json");
    r = resume();
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("trainer.json is not valid JSON"), std::string::npos) << r.output;
    // Restored, it resumes; nothing was written by the refused attempts.
    test::write_file(ck + "/trainer.json", trainer);
    EXPECT_EQ(losses(a + "/metrics.jsonl").size(), 2u);
    r = resume();
    EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST_F(Checkpoint, SampleAndEvalOpenCheckpoints) {
    const std::string a = dir_ + "/a";
    ASSERT_EQ(train("--config.train.steps=6 --config.checkpoint.interval=3 --config.log.dir=" + a)
                  .exit_code,
              0);
    for (const std::string& path : {a + "/checkpoints/step_3", a + "/checkpoints/step_6"}) {
        auto r = test::run_command(test::meshlm_binary() + " eval --checkpoint " + path);
        EXPECT_EQ(r.exit_code, 0) << r.output;
        r = test::run_command(test::meshlm_binary() + " sample --checkpoint " + path +
                              " --prompt Doc --max-new-tokens 5 --temperature 0");
        EXPECT_EQ(r.exit_code, 0) << r.output;
    }
    // The final checkpoint holds the final weights.
    EXPECT_EQ(test::read_file(a + "/checkpoints/step_6/model.safetensors").size(),
              test::read_file(a + "/model.safetensors").size());
}

TEST_F(Checkpoint, InitFromLoadsWeightsWithAFreshOptimizer) {
    const std::string a = dir_ + "/a", b = dir_ + "/b", c = dir_ + "/c";
    ASSERT_EQ(train("--config.train.steps=40 --config.log.dir=" + a).exit_code, 0);
    auto r =
        train("--config.train.steps=1 --config.model.init_from=" + a + " --config.log.dir=" + b);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("initialized weights from"), std::string::npos) << r.output;
    ASSERT_EQ(train("--config.train.steps=1 --config.log.dir=" + c).exit_code, 0);
    // Warm-started: the first loss is the trained model's, far below a random init's (ln 257).
    const double warm = std::stod(losses(b + "/metrics.jsonl")[1]),
                 cold = std::stod(losses(c + "/metrics.jsonl")[1]),
                 trained = std::stod(losses(a + "/metrics.jsonl")[40]);
    EXPECT_LT(warm, cold - 1.0);
    EXPECT_NEAR(warm, trained, 0.5);
    // Fresh schedule: step 1's learning rate is the first warmup step's in both.
    std::regex lr_re("\"lr\": ([^,}]+)");
    std::smatch mb, mc;
    std::string lb = test::read_file(b + "/metrics.jsonl"),
                lc = test::read_file(c + "/metrics.jsonl");
    ASSERT_TRUE(std::regex_search(lb, mb, lr_re));
    ASSERT_TRUE(std::regex_search(lc, mc, lr_re));
    EXPECT_EQ(mb[1], mc[1]);
    // Other shapes are refused before a run directory appears.
    r = train("--config.model.d_model=64 --config.model.init_from=" + a +
              " --config.log.dir=" + dir_ + "/d");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("has shape"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir_ + "/d"));
}

TEST_F(Checkpoint, ShardedCheckpointsResumeExactly) {
    const std::string a = dir_ + "/a", b = dir_ + "/b";
    const std::string shard = " --config.checkpoint.max_shard_size=40KB";
    auto r = train("--config.train.steps=6 --config.checkpoint.interval=3 --config.log.dir=" + a +
                   shard);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string ck = a + "/checkpoints/step_3";
    ASSERT_TRUE(fs::exists(ck + "/model.safetensors.index.json"));
    EXPECT_FALSE(fs::exists(ck + "/model.safetensors"));
    EXPECT_TRUE(fs::exists(ck + "/model-00001-of-00004.safetensors"));
    // Every shard is covered by the checksums.
    const std::string trainer = test::read_file(ck + "/trainer.json");
    EXPECT_NE(trainer.find("model-00004-of-00004.safetensors"), std::string::npos);
    r = test::run_command(test::meshlm_binary() + " train --resume " + ck +
                          " --config.log.dir=" + b);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto la = losses(a + "/metrics.jsonl"), lb = losses(b + "/metrics.jsonl");
    for (long s = 4; s <= 6; ++s) EXPECT_EQ(la[s], lb[s]) << "step " << s;
    EXPECT_EQ(test::read_file(a + "/model.safetensors"), test::read_file(b + "/model.safetensors"));
    // A damaged shard is named.
    const std::string shard2 = ck + "/model-00002-of-00004.safetensors";
    std::string bytes = test::read_file(shard2);
    bytes[bytes.size() / 2] ^= 1;
    test::write_file(shard2, bytes);
    r = test::run_command(test::meshlm_binary() + " train --resume " + ck +
                          " --config.log.dir=" + dir_ + "/c");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("model-00002-of-00004.safetensors has CRC-32"), std::string::npos)
        << r.output;
}

TEST_F(Checkpoint, InitFromAHuggingFaceDirectory) {
    // The tiny HF GPT-2 fixture (2 layers, width 32, 4 heads, vocab 300, context 32). With a
    // vanishing learning rate the trained weights stay the imported ones, which must equal what
    // `meshlm convert` imports (itself checked against transformers' logits).
    const std::string hf = test::fixture("hf_gpt2_tiny"), a = dir_ + "/a";
    const std::string shape =
        " --config.model.d_model=32 --config.model.n_head=4 --config.model.vocab_size=300";
    auto r = train(
        "--config.train.steps=1 --config.optim.lr=1e-30 --config.optim.weight_decay=0"
        " --config.model.init_from=" +
        hf + shape + " --config.log.dir=" + a);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("(Hugging Face GPT-2)"), std::string::npos) << r.output;
    r = test::run_command(test::meshlm_binary() + " convert --from hf --to meshlm " + hf + " " +
                          dir_ + "/converted");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    SafetensorsFile trained(a + "/model.safetensors"),
        imported(dir_ + "/converted/model.safetensors");
    ASSERT_EQ(trained.names(), imported.names());
    for (const auto& name : trained.names())
        EXPECT_EQ(trained.f32(name), imported.f32(name)) << name;
    // Other shapes: the message lists the HF model's values.
    r = train("--config.train.steps=1 --config.model.init_from=" + hf +
              " --config.log.dir=" + dir_ + "/b");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("has n_layer 2, d_model 32, n_head 4, vocab_size 300, max_seq_len 32"),
              std::string::npos)
        << r.output;
}

}  // namespace
}  // namespace meshlm

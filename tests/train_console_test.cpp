// What `meshlm train` tells the person watching: a short summary of the resolved config with the
// values actually used, step lines with elapsed time and an ETA, an MFU never above 100 %,
// evaluation progress on a terminal, a final evaluation capped by train.final_eval_batches or
// sized to a short run, a resume whose loader state no longer fits explained in words; and the
// HF export's dropout rates are the ones meshlm trained with. Output to a pipe has no redraws; a
// changed schedule on resume and a warmup longer than the run are said in one line; a stopped run's
// resume command runs as printed.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <regex>
#include <sstream>
#include <thread>

#include "test_util.h"

extern char** environ;

namespace meshlm {
namespace {

namespace fs = std::filesystem;

// A tiny GPT-2 (configs/tiny-gpt2.yaml, the option table's defaults; `meshlm train` without
// --config trains the default run's Transformer-VQ, whose step lines carry VQ statistics and which
// has no Hugging Face export).
std::string tiny_flags(const std::string& corpus, const std::string& cache) {
    return " --config " + test::source_dir() + "/configs/tiny-gpt2.yaml" +
           " --config.model.n_layer=1 --config.model.d_model=32 --config.model.n_head=2"
           " --config.model.max_seq_len=32 --config.train.seq_len=32 --config.train.batch_size=4"
           " --config.train.threads=2 --config.log.interval=2 --config.log.eval_interval=0"
           " --config.log.sample_tokens=0 --config.data.path=" +
           corpus + " --config.data.cache_dir=" + cache;
}

class TrainConsole : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = test::temp_dir("console");
        corpus_ = test::write_test_corpus(dir_);
        flags_ = tiny_flags(corpus_, dir_ + "/cache");
    }
    test::CommandResult train(const std::string& extra) {
        return test::run_command(test::meshlm_binary() + " train" + flags_ + " " + extra);
    }
    std::string dir_, corpus_, flags_;
};

TEST_F(TrainConsole, TheSummaryShowsTheValuesUsed) {
    // No log.dir and no data.cache_dir: the summary names where they resolved to.
    const auto r = test::run_command(
        "cd " + dir_ + " && env XDG_CACHE_HOME=" + dir_ + "/xdg " + test::meshlm_binary() +
        " train --config.model.n_layer=1 --config.model.d_model=32 --config.model.n_head=2"
        " --config.model.max_seq_len=32 --config.train.seq_len=32 --config.train.steps=2"
        " --config.log.sample_tokens=0 --config.data.path=" +
        corpus_);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("resolved config: (every key: runs/default/config.yaml)"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("  run directory: runs/default\n"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("| cache " + dir_ + "/xdg/meshlm\n"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("  model: n_layer=1 d_model=32 n_head=2"), std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("\"\""), std::string::npos) << r.output;
    // The full config is in the run directory.
    EXPECT_NE(test::read_file(dir_ + "/runs/default/config.yaml").find("dir: \"runs/default\""),
              std::string::npos);
}

TEST_F(TrainConsole, StepLinesCarryElapsedTimeAndAnEtaAndMfuNeverExceeds100) {
    // A peak far below what the machine does: MFU is capped, with a note saying why.
    const auto r = train(
        "--config.train.steps=6 --config.train.peak_gflops=0.001 "
        "--config.log.dir=" +
        dir_ + "/a");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(std::regex_search(
        r.output, std::regex("step      2/6 \\| .*\\| mfu 100\\.0% \\| [0-9.]+ s elapsed, ETA ")))
        << r.output;
    // The last step's ETA is the final evaluation's and the last checkpoint's.
    EXPECT_TRUE(
        std::regex_search(r.output, std::regex("step      6/6 \\| .* s elapsed, ETA [0-9.]+ s\n")))
        << r.output;
    EXPECT_TRUE(std::regex_search(
        r.output, std::regex("exceeds the (fp32|bf16) peak of 0 GFLOP/s \\(train.peak_gflops\\)")))
        << r.output;
    std::istringstream metrics(test::read_file(dir_ + "/a/metrics.jsonl"));
    for (std::string line; std::getline(metrics, line);)
        EXPECT_LE(nlohmann::json::parse(line)["mfu"].get<double>(), 1.0) << line;
    const std::regex mfu_re("mfu ([0-9.]+)%");
    int lines = 0;
    for (std::sregex_iterator it(r.output.begin(), r.output.end(), mfu_re), end; it != end;
         ++it, ++lines)
        EXPECT_LE(std::stod((*it)[1]), 100.0) << r.output;
    EXPECT_EQ(lines, 3);
}

TEST_F(TrainConsole, FinalEvaluationShowsProgressAndFinalEvalBatchesCapsIt) {
    // On a terminal (script(1) gives the run one) the final evaluation draws a live line.
    const std::string cmd = test::meshlm_binary() + " train" + flags_ +
                            " --config.train.steps=2 --config.log.dir=" + dir_ + "/a";
    auto r = test::run_command("script -qec '" + cmd + "' /dev/null");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(std::regex_search(
        r.output, std::regex("\rfinal evaluation: ([0-9]+)/\\1 batches \\(100%\\)")))
        << r.output;
    // The cap: one batch gives another loss than the whole split.
    auto val_of = [](const std::string& out) {
        std::smatch m;
        EXPECT_TRUE(std::regex_search(out, m, std::regex("val_loss ([0-9.]+)"))) << out;
        return m.size() > 1 ? m[1].str() : std::string();
    };
    const auto whole = train(
        "--config.train.steps=2 --config.train.final_eval_batches=0 --config.log.dir=" + dir_ +
        "/b");
    const auto one = train(
        "--config.train.steps=2 --config.train.final_eval_batches=1 "
        "--config.log.dir=" +
        dir_ + "/c");
    ASSERT_EQ(whole.exit_code, 0) << whole.output;
    ASSERT_EQ(one.exit_code, 0) << one.output;
    EXPECT_NE(val_of(whole.output), val_of(one.output));
}

TEST_F(TrainConsole, AShortRunsFinalEvaluationIsSizedToTheRunAndSaysSo) {
    // On a terminal, so that the final evaluation's progress line gives its batch count.
    auto term = [&](const std::string& extra) {
        return test::run_command("script -qec '" + test::meshlm_binary() + " train" + flags_ + " " +
                                 extra + "' /dev/null");
    };
    auto batches = [](const std::string& out) {
        std::smatch m;
        EXPECT_TRUE(std::regex_search(out, m, std::regex("final evaluation: ([0-9]+)/\\1 batches")))
            << out;
        return m.size() > 1 ? std::stol(m[1].str()) : -1L;
    };
    // 2 steps of 4 x 32 tokens train on 256 tokens: 2 evaluation batches of 4 x 32.
    const auto sized = term("--config.train.steps=2 --config.log.dir=" + dir_ + "/a");
    const auto whole =
        term("--config.train.steps=2 --config.train.final_eval_batches=0 --config.log.dir=" + dir_ +
             "/b");
    ASSERT_EQ(sized.exit_code, 0) << sized.output;
    ASSERT_EQ(whole.exit_code, 0) << whole.output;
    const long all = batches(whole.output);
    EXPECT_GT(all, 2) << whole.output;
    EXPECT_EQ(batches(sized.output), 2) << sized.output;
    EXPECT_NE(sized.output.find("final evaluation: 2 of the " + std::to_string(all) +
                                " validation batches, sized to the run (at most the 256 tokens "
                                "its 2 steps train on; train.final_eval_batches=0 scores the "
                                "whole split)"),
              std::string::npos)
        << sized.output;
    EXPECT_EQ(whole.output.find("sized to the run"), std::string::npos) << whole.output;
    // Periodic evaluations of 3 batches: the final one scores at least as many.
    const auto periodic = term(
        "--config.train.steps=2 --config.log.eval_interval=1 --config.train.eval_batches=3 "
        "--config.log.dir=" +
        dir_ + "/c");
    ASSERT_EQ(periodic.exit_code, 0) << periodic.output;
    EXPECT_EQ(batches(periodic.output), 3) << periodic.output;
}

TEST_F(TrainConsole, AResumeWhoseLoaderStateNoLongerFitsIsExplainedInWords) {
    const std::string a = dir_ + "/a";
    ASSERT_EQ(train("--config.train.steps=2 --config.log.dir=" + a).exit_code, 0);
    const auto r = test::run_command(test::meshlm_binary() + " train --resume " + a +
                                     " --config.train.steps=4 --config.train.seq_len=16");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("train.seq_len was 32 when the checkpoint was written and is 16 now"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("{\""), std::string::npos) << "a JSON dump:\n" << r.output;
}

TEST_F(TrainConsole, OutputToAFileOrPipeHasNoRedraws) {
    // run_command reads a pipe: progress comes as plain lines (the data preparation's here; on a
    // terminal it redraws a bar, and evaluations draw a live line), never \r or ESC[K.
    const auto r = train("--config.train.steps=2 --config.log.dir=" + dir_ + "/a");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("\nprepare: 100.0%"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find('\r'), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("\033["), std::string::npos) << r.output;
}

TEST_F(TrainConsole, AChangedScheduleAndAWarmupLongerThanTheRunAreSaid) {
    const std::string a = dir_ + "/a";
    auto r = train("--config.train.steps=2 --config.optim.warmup_steps=5 --config.log.dir=" + a);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("note: optim.warmup_steps (5) exceeds train.steps (2): the run ends "
                            "inside the warmup and never reaches optim.lr\n"),
              std::string::npos)
        << r.output;
    r = test::run_command(test::meshlm_binary() + " train --resume " + a +
                          " --config.train.steps=8");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("note: train.steps is 8, 2 when the checkpoint was written: the "
                            "learning-rate schedule now ends at step 8"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("warmup_steps (5) exceeds"), std::string::npos) << r.output;
}

TEST_F(TrainConsole, TheResumeCommandOfAStoppedRunRunsAsPrinted) {
    const std::string run = dir_ + "/run", log = dir_ + "/log";
    const std::string cmd = "exec " + test::meshlm_binary() + " train" + flags_ +
                            " --config.train.steps=100000 --config.checkpoint.interval=0"
                            " --config.log.dir=" +
                            run + " > " + log + " 2>&1";
    const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
    pid_t pid = -1;
    ASSERT_EQ(posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ), 0);
    for (int i = 0; i < 600 && test::read_file(run + "/metrics.jsonl").empty(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kill(pid, SIGINT);
    int status = 0;
    waitpid(pid, &status, 0);
    const std::string out = test::read_file(log);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(out, m, std::regex("resume with: (.*)\n"))) << out;
    // The binary's real path (it need not be on PATH), then the arguments.
    const std::string printed = m[1];
    EXPECT_EQ(printed, fs::canonical(test::meshlm_binary()).string() + " train --resume " + run);
    // As printed, from another directory, with a few more steps.
    const long stopped = std::stol(test::read_file(run + "/checkpoints/latest").substr(5));
    const auto r = test::run_command("cd / && env PATH=/usr/bin:/bin " + printed +
                                     " --config.train.steps=" + std::to_string(stopped + 2));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("resuming from"), std::string::npos) << r.output;
}

TEST_F(TrainConsole, TheHuggingFaceExportCarriesTheDropoutRatesMeshlmTrainedWith) {
    const std::string a = dir_ + "/a";
    ASSERT_EQ(train("--config.train.steps=1 --config.log.dir=" + a).exit_code, 0);
    const auto r = test::run_command(test::meshlm_binary() + " convert --from meshlm --to hf " + a +
                                     " " + dir_ + "/hf");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto j = nlohmann::json::parse(test::read_file(dir_ + "/hf/config.json"));
    for (const char* k : {"attn_pdrop", "embd_pdrop", "resid_pdrop"})
        EXPECT_EQ(j.at(k).get<double>(), 0.0) << k;
}

}  // namespace
}  // namespace meshlm

namespace meshlm {
namespace {

// train.precision in the log: `auto` resolves by the CPU, and bf16 on a CPU without native bf16
// dot products (forced with MESHLM_NO_NATIVE_BF16) still trains, saying what it costs there.
TEST_F(TrainConsole, PrecisionIsLoggedAndTheWidenedPathExplainsItsCost) {
    const auto a =
        test::run_command("MESHLM_NO_NATIVE_BF16=1 " + test::meshlm_binary() + " train" + flags_ +
                          " --config.train.steps=2 --config.log.dir=" + dir_ + "/auto");
    ASSERT_EQ(a.exit_code, 0) << a.output;
    EXPECT_NE(a.output.find("precision: fp32 (train.precision: auto)"), std::string::npos)
        << a.output;
    const auto b =
        test::run_command("MESHLM_NO_NATIVE_BF16=1 " + test::meshlm_binary() + " train" + flags_ +
                          " --config.train.steps=2 --config.train.precision=bf16"
                          " --config.log.dir=" +
                          dir_ + "/bf16");
    ASSERT_EQ(b.exit_code, 0) << b.output;
    EXPECT_NE(b.output.find("precision: bf16 GEMMs"), std::string::npos) << b.output;
    EXPECT_TRUE(std::regex_search(
        b.output, std::regex("no native bf16 dot products .* GEMM takes [0-9]+ % of its fp32 "
                             "time here")))
        << b.output;
    // Widened bf16 GEMMs run at the fp32 rate: MFU counts against the FMA probe's peak, never
    // against a bf16 probe this CPU cannot run (it would read 0 and cap every MFU).
    EXPECT_NE(b.output.find("(measured: best of 5 FMA probes; widened bf16 GEMMs run at the fp32 "
                            "rate)"),
              std::string::npos)
        << b.output;
    EXPECT_EQ(b.output.find("bf16 peak 0 GFLOP/s"), std::string::npos) << b.output;
    EXPECT_EQ(b.output.find("MFU is shown capped"), std::string::npos) << b.output;
}

}  // namespace
}  // namespace meshlm

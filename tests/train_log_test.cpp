// RUN_DIR/train.log: what the console showed, byte for byte where the console is no terminal;
// a resumed run appends; an error that ends a run is its last line; a live line's redraws and
// terminal escapes are left out.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "meshlm/train/run_log.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace meshlm {
namespace {

std::string tiny_flags(const std::string& corpus, const std::string& cache) {
    return " --config " + test::source_dir() + "/configs/tiny-gpt2.yaml" +
           " --config.model.n_layer=2 --config.model.d_model=32 --config.model.n_head=2"
           " --config.model.max_seq_len=32 --config.train.seq_len=32 --config.train.batch_size=4"
           " --config.train.threads=2 --config.train.peak_gflops=100 --config.log.interval=2"
           " --config.log.eval_interval=4 --config.train.eval_batches=2"
           " --config.train.final_eval_batches=2 --config.log.sample_tokens=8"
           " --config.data.path=" +
           corpus + " --config.data.cache_dir=" + cache;
}

TEST(TrainLog, HoldsTheConsoleAndGrowsOnResume) {
    const std::string dir = test::temp_dir("train_log"), run = dir + "/run";
    const std::string flags = tiny_flags(test::write_test_corpus(dir), dir + "/cache");
    // stdout only: the data preparation's progress goes to stderr directly.
    const auto first = test::run_command("{ " + test::meshlm_binary() + " train" + flags +
                                         " --config.train.steps=8 --config.checkpoint.interval=4"
                                         " --config.log.dir=" +
                                         run + " 2>/dev/null; }");
    ASSERT_EQ(first.exit_code, 0) << first.output;
    EXPECT_NE(first.output.find("sample:\n"), std::string::npos);
    EXPECT_EQ(test::read_file(run + "/train.log"), first.output);
    const auto resumed = test::run_command("{ " + test::meshlm_binary() + " train --resume " + run +
                                           "/checkpoints/step_4 2>/dev/null; }");
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("resuming from"), std::string::npos);
    EXPECT_EQ(test::read_file(run + "/train.log"), first.output + resumed.output);
}

TEST(TrainLog, EndsWithTheErrorThatEndedTheRun) {
    const std::string dir = test::temp_dir("train_log_error"), run = dir + "/run";
    const std::string flags = tiny_flags(test::write_test_corpus(dir), dir + "/cache");
    const auto r = test::run_command(test::meshlm_binary() + " train" + flags +
                                     " --config.train.steps=6 --config.train.nan_policy=halt"
                                     " --config.train.debug_inject_nan_step=3 --config.log.dir=" +
                                     run);
    ASSERT_NE(r.exit_code, 0) << r.output;
    const std::string log = test::read_file(run + "/train.log");
    const auto at = log.rfind("error: training halted (train.nan_policy=halt): step 3");
    ASSERT_NE(at, std::string::npos) << log;
    EXPECT_EQ(log.find('\n', at), log.size() - 1) << log;  // the last line
}

// No run directory, no log: a refused run leaves nothing behind.
TEST(TrainLog, RefusedRunWritesNoLog) {
    const std::string dir = test::temp_dir("train_log_refused");
    const auto r = test::run_command(
        test::meshlm_binary() + " train --config.train.steps=-1 --config.log.dir=" + dir + "/run");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_FALSE(fs::exists(dir + "/run"));
}

TEST(TrainLog, LiveLinesKeepTheirLastStateAndEscapesGo) {
    const std::string path = test::temp_dir("train_log_text") + "/train.log";
    {
        LogText t;
        for (char c : std::string("held\n")) t.put(c);  // before open: kept for the file
        t.open(path, false);
        for (char c : std::string("eval: 1/4\033[K\reval: 4/4 (100%)\033[K\nnext\n")) t.put(c);
    }
    EXPECT_EQ(test::read_file(path), "held\neval: 4/4 (100%)\nnext\n");
    {
        LogText t;
        t.open(path, true);
        for (char c : std::string("\033[1mbold\033[0m\n")) t.put(c);
    }
    EXPECT_EQ(test::read_file(path), "held\neval: 4/4 (100%)\nnext\nbold\n");
}

}  // namespace
}  // namespace meshlm

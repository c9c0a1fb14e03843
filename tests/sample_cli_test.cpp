// `meshlm sample` end to end on a tiny trained run: the prompt from a flag, a file and stdin;
// --num-samples headers and sample independence; --stop cutting the streamed text; the
// repetition penalty and bf16 flags; bad flags failing with a message.
#include <gtest/gtest.h>

#include <fstream>

#include "test_util.h"

namespace meshlm {
namespace {

class SampleCli : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = new std::string(test::temp_dir("sample_cli"));
        std::ofstream out(*dir_ + "/corpus.txt");
        for (int i = 0; i < 200; ++i)
            out << "Document " << i << ": a fox jumps " << i % 5 << "\n%\n";
        out.close();
        auto r = test::run_command(
            test::meshlm_binary() +
            " train --config.model.n_layer=2 --config.model.d_model=32 --config.model.n_head=2"
            " --config.model.max_seq_len=32 --config.train.seq_len=32 --config.train.batch_size=4"
            " --config.train.steps=20 --config.train.threads=2 --config.train.peak_gflops=100"
            " --config.log.interval=10 --config.log.eval_interval=20 --config.log.sample_tokens=0"
            " --config.data.path=" +
            *dir_ + "/corpus.txt --config.log.dir=" + *dir_ + "/run" +
            " --config.data.cache_dir=" + *dir_ + "/cache");
        ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    static void TearDownTestSuite() { delete dir_; }

    // stdout and stderr of `meshlm sample --checkpoint RUN flags`, with `input` as stdin.
    static test::CommandResult sample(const std::string& flags, const std::string& input = "") {
        test::write_file(*dir_ + "/stdin.txt", input);
        return test::run_command(test::meshlm_binary() + " sample --checkpoint " + *dir_ +
                                 "/run --threads 2 " + flags + " < " + *dir_ + "/stdin.txt");
    }
    static std::string ok(const std::string& flags, const std::string& input = "") {
        auto r = sample(flags, input);
        EXPECT_EQ(r.exit_code, 0) << flags << "\n" << r.output;
        return r.output;
    }

    static std::string* dir_;
};
std::string* SampleCli::dir_ = nullptr;

TEST_F(SampleCli, PromptFromFlagFileOrStdinGivesTheSameText) {
    const std::string flags = " --temperature 1 --seed 4 --max-new-tokens 30";
    std::string by_flag = ok("--prompt 'Document 7:'" + flags);
    EXPECT_EQ(by_flag.rfind("Document 7:", 0), 0u) << by_flag;  // the prompt is echoed
    EXPECT_GT(by_flag.size(), std::string("Document 7:\n").size());
    test::write_file(*dir_ + "/prompt.txt", "Document 7:");
    EXPECT_EQ(ok("--prompt-file " + *dir_ + "/prompt.txt" + flags), by_flag);
    EXPECT_EQ(ok("--prompt-file -" + flags, "Document 7:"), by_flag);
    EXPECT_EQ(ok(flags, "Document 7:"), by_flag);  // stdin, not a terminal
    EXPECT_NE(ok(flags, "Document 8:"), by_flag);
}

TEST_F(SampleCli, NumSamplesAreHeadedAndIndependentOfTheirCount) {
    const std::string flags = "--prompt 'Doc' --temperature 1.5 --seed 9 --max-new-tokens 20";
    std::string one = ok(flags), three = ok(flags + " --num-samples 3");
    auto part = [&](int i) {
        const std::string h = "--- sample " + std::to_string(i) + " ---\n";
        std::size_t a = three.find(h);
        EXPECT_NE(a, std::string::npos) << three;
        a += h.size();
        std::size_t b = three.find("--- sample " + std::to_string(i + 1) + " ---\n", a);
        return three.substr(a, b == std::string::npos ? std::string::npos : b - a);
    };
    EXPECT_EQ(three.rfind("--- sample 1 ---\n", 0), 0u);
    EXPECT_EQ(part(1), one);
    EXPECT_NE(part(2), part(1));
    EXPECT_NE(part(3), part(2));
    EXPECT_EQ(part(3).rfind("Doc", 0), 0u);
}

TEST_F(SampleCli, StopStringEndsTheTextJustBeforeIt) {
    const std::string flags = "--prompt 'Doc' --temperature 1.2 --seed 3 --max-new-tokens 40";
    std::string full = ok(flags);
    ASSERT_GT(full.size(), 20u);
    // A stop taken from the middle of the continuation: the text ends right before its first
    // occurrence after the prompt.
    const std::string stop = full.substr(12, 2);
    const std::size_t at = full.find(stop, 3);
    std::string quoted = "'" + stop + "'";
    if (stop.find('\'') != std::string::npos) GTEST_SKIP() << "awkward to quote";
    EXPECT_EQ(ok(flags + " --stop " + quoted), full.substr(0, at) + "\n");
    // Several stops: the earliest wins; a stop that never appears changes nothing.
    EXPECT_EQ(ok(flags + " --stop " + quoted + " --stop '\x01\x02'"), full.substr(0, at) + "\n");
    EXPECT_EQ(ok(flags + " --stop 'never-in-this-text'"), full);
}

TEST_F(SampleCli, PenaltyAndBf16FlagsRun) {
    std::string greedy = ok("--prompt 'Doc' --temperature 0 --max-new-tokens 24");
    EXPECT_EQ(ok("--prompt 'Doc' --temperature 0 --max-new-tokens 24 --repetition-penalty 1"),
              greedy);
    EXPECT_NE(ok("--prompt 'Doc' --temperature 0 --max-new-tokens 24 --repetition-penalty 5"),
              greedy);
    EXPECT_EQ(ok("--prompt 'Doc' --temperature 0 --max-new-tokens 24 --precision bf16").size(),
              greedy.size());
    // The filters reach the sampler: a tiny typical mass keeps one token per step, so seeds
    // no longer matter; eta-sampling runs.
    EXPECT_EQ(ok("--prompt 'Doc' --max-new-tokens 24 --typical-p 1e-6 --seed 1"),
              ok("--prompt 'Doc' --max-new-tokens 24 --typical-p 1e-6 --seed 2"));
    EXPECT_FALSE(ok("--prompt 'Doc' --max-new-tokens 24 --eta-cutoff 0.01 --seed 1").empty());
    // A prompt longer than the 32-token context: a note, its last 32 tokens are used, and
    // generation runs past the context (the window slides; tests/generate_test.cpp checks how).
    const std::string long_prompt(40, 'D');
    auto r = sample("--prompt " + long_prompt + " --temperature 0 --max-new-tokens 40");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("the model sees the last 32"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(long_prompt), std::string::npos) << r.output;
}

TEST_F(SampleCli, BadFlagsFailWithAMessage) {
    for (const char* bad :
         {"--prompt x --num-samples 0", "--prompt x --repetition-penalty 0",
          "--prompt x --top-p 1.5", "--prompt x --top-p 0", "--prompt x --temperature -1",
          "--prompt x --precision fp8", "--prompt x --prompt-file /dev/null",
          "--prompt-file /nonexistent", "--prompt x --max-new-tokens -3", "--prompt x --bogus",
          "--prompt x --typical-p 0", "--prompt x --typical-p 1.5", "--prompt x --eta-cutoff 1",
          "--prompt x --eta-cutoff -0.1"}) {
        auto r = sample(bad);
        EXPECT_NE(r.exit_code, 0) << bad;
        EXPECT_FALSE(r.output.empty()) << bad;
    }
}

}  // namespace
}  // namespace meshlm

// ALiBi needs no position table, so a model trained at context T evaluates at 2T: the tiny
// ALiBi config trained on the default corpus at T = 128 keeps its validation loss at T = 256
// within 10 % of its loss at 128. Slow (a few minutes): label `slow`.
#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <string>

#include "test_util.h"

namespace meshlm {
namespace {

double eval_loss(const std::string& run, int seq_len) {
    auto r = test::run_command(test::meshlm_binary() + " eval --checkpoint " + run + " --seq-len " +
                               std::to_string(seq_len));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::smatch m;
    const std::regex re("loss ([0-9.]+) nats/token");
    EXPECT_TRUE(std::regex_search(r.output, m, re)) << r.output;
    return m.empty() ? 0 : std::stod(m[1]);
}

TEST(AlibiContext, TrainedAtTEvaluatesAtTwoT) {
    const std::string run = test::temp_dir("alibi") + "/run";
    auto r = test::run_command(test::meshlm_binary() + " train --config " + test::source_dir() +
                               "/configs/tiny-alibi.yaml --config.train.steps=800"
                               " --config.log.sample_tokens=0 --config.log.dir=" +
                               run);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const double at_t = eval_loss(run, 128), at_2t = eval_loss(run, 256);
    std::printf("validation loss at T = 128: %.4f, at 2T = 256: %.4f (ratio %.3f)\n", at_t, at_2t,
                at_2t / at_t);
    EXPECT_LT(at_t, 2.5) << "the model learned the corpus";
    EXPECT_LE(at_2t, 1.10 * at_t);
    // Past model.max_seq_len a context is refused with the key named.
    auto learned =
        test::run_command(test::meshlm_binary() + " eval --checkpoint " + run + " --seq-len 512");
    EXPECT_EQ(learned.exit_code, 2) << learned.output;
    EXPECT_NE(learned.output.find("exceeds the model's context model.max_seq_len = 256"),
              std::string::npos)
        << learned.output;
}

}  // namespace
}  // namespace meshlm

// The final evaluation sized to the run (train/final_eval_size.h): an explicit
// train.final_eval_batches is kept; by default a short run scores at most the tokens it trains
// on, never fewer batches than its periodic evaluations, and the default recipe
// (configs/default.yaml) keeps its evaluation of the whole split.
#include <gtest/gtest.h>

#include "meshlm/cli/config.h"
#include "meshlm/train/final_eval_size.h"

namespace meshlm {
namespace {

constexpr std::uint64_t kBatch = 16 * 128;  // tokens of a 16 x 128 evaluation batch

TEST(FinalEvalSize, AnExplicitValueIsKept) {
    TrainConfig tc;
    LogConfig log;
    tc.steps = 10;
    tc.final_eval_batches = 0;  // the whole split
    EXPECT_EQ(final_eval_size(tc, log, 10 * kBatch, kBatch, 122).batches, 0);
    EXPECT_EQ(final_eval_size(tc, log, 10 * kBatch, kBatch, 122).note, "");
    tc.final_eval_batches = 50;
    EXPECT_EQ(final_eval_size(tc, log, 10 * kBatch, kBatch, 122).batches, 50);
}

TEST(FinalEvalSize, AShortRunScoresAtMostTheTokensItTrainsOn) {
    TrainConfig tc;  // final_eval_batches -1: sized to the run
    LogConfig log;   // evaluations every 250 steps: none in a 10-step run
    tc.steps = 10;
    FinalEvalSize s = final_eval_size(tc, log, 10 * kBatch, kBatch, 122);
    EXPECT_EQ(s.batches, 10);
    EXPECT_EQ(s.note,
              "final evaluation: 10 of the 122 validation batches, sized to the run (at most the "
              "20.5k tokens its 10 steps train on; train.final_eval_batches=0 scores the whole "
              "split)");
    // A partial batch's worth counts as a batch.
    EXPECT_EQ(final_eval_size(tc, log, 10 * kBatch + 1, kBatch, 122).batches, 11);
    // A run that trains on the split's size or more scores it whole, and says nothing.
    s = final_eval_size(tc, log, 122 * kBatch, kBatch, 122);
    EXPECT_EQ(s.batches, 0);
    EXPECT_EQ(s.note, "");
}

TEST(FinalEvalSize, PeriodicEvaluationsSetTheFloor) {
    TrainConfig tc;
    LogConfig log;
    tc.steps = 4;
    log.eval_interval = 2;
    tc.eval_batches = 5;  // more than the 4 batches the run trains on
    FinalEvalSize s = final_eval_size(tc, log, 4 * kBatch, kBatch, 122);
    EXPECT_EQ(s.batches, 5);
    EXPECT_NE(s.note.find("5 of the 122 validation batches, sized to the run (train.eval_batches"),
              std::string::npos)
        << s.note;
    // Periodic evaluations of the whole split: the final one is whole too.
    tc.eval_batches = 0;
    EXPECT_EQ(final_eval_size(tc, log, 4 * kBatch, kBatch, 122).batches, 0);
    // An evaluation only at the last step is the final one: no floor.
    log.eval_interval = 4;
    EXPECT_EQ(final_eval_size(tc, log, 4 * kBatch, kBatch, 122).batches, 4);
}

TEST(FinalEvalSize, TheDefaultRecipeKeepsItsEvaluationOfTheWholeSplit) {
    const Config c = load_config(kDefaultRecipe, {});
    const TrainConfig& tc = c.train;
    ASSERT_EQ(tc.final_eval_batches, -1);
    const std::uint64_t batch = static_cast<std::uint64_t>(tc.batch_size) * tc.seq_len;
    const std::uint64_t run = batch * tc.grad_accum * tc.steps;  // 2000 steps of 16 x 128
    // Its periodic evaluations score the whole split, however large.
    EXPECT_EQ(final_eval_size(tc, c.log, run, batch, 1000000).batches, 0);
    // Without them the token cap alone keeps the fortunes split whole (122 batches of 16 x 128),
    // as it would any split of up to 2000 batches.
    LogConfig final_only = c.log;
    final_only.eval_interval = 0;
    EXPECT_EQ(final_eval_size(tc, final_only, run, batch, 122).batches, 0);
    EXPECT_EQ(final_eval_size(tc, final_only, run, batch, 2000).batches, 0);
    EXPECT_EQ(final_eval_size(tc, final_only, run, batch, 2001).batches, 2000);
}

}  // namespace
}  // namespace meshlm

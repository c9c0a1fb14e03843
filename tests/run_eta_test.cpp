// The ETA's arithmetic (train/run_eta.h): the evaluations and checkpoints still to come,
// counted from the run's schedule, and their time: the mean of those so far once some ran, a
// forward pass's share of a step (and a checkpoint's bytes at 500 MB/s) before; the step time
// without them.
#include <gtest/gtest.h>

#include "meshlm/train/run_eta.h"

namespace meshlm {
namespace {

// 100 steps, periodic evaluations of 10 batches every 25 steps, a final one of 40, checkpoints
// every 30 steps and at the end.
RunSchedule schedule() {
    RunSchedule s;
    s.steps = 100;
    s.eval_interval = 25;
    s.evaluates = true;
    s.eval_batches = 10;
    s.final_eval_batches = 40;
    s.checkpoint_interval = 30;
    return s;
}

TEST(RemainingWork, CountsThePeriodicAndFinalEvaluationsAndTheCheckpointsToCome) {
    const RunSchedule s = schedule();
    // After step 10: evaluations at 25, 50 and 75 and the final one at 100; checkpoints at 30,
    // 60, 90 and 100.
    RemainingWork w = remaining_work(s, 10);
    EXPECT_EQ(w.steps, 90);
    EXPECT_EQ(w.eval_batches, 3 * 10 + 40);
    EXPECT_EQ(w.checkpoints, 4);
    // Step 25's own evaluation and step 30's checkpoint come after their log lines.
    EXPECT_EQ(remaining_work(s, 25).eval_batches, 3 * 10 + 40);
    EXPECT_EQ(remaining_work(s, 26).eval_batches, 2 * 10 + 40);
    EXPECT_EQ(remaining_work(s, 30).checkpoints, 4);
    EXPECT_EQ(remaining_work(s, 31).checkpoints, 3);
    // The last step: only the final evaluation and the last checkpoint are left.
    w = remaining_work(s, 100);
    EXPECT_EQ(w.steps, 0);
    EXPECT_EQ(w.eval_batches, 40);
    EXPECT_EQ(w.checkpoints, 1);
}

TEST(RemainingWork, SyntheticDataEvaluatesNothingAndIntervalZeroNeverCheckpoints) {
    RunSchedule s = schedule();
    s.evaluates = false;
    EXPECT_EQ(remaining_work(s, 10).eval_batches, 0);
    EXPECT_EQ(remaining_work(s, 10).checkpoints, 4);
    s = schedule();
    s.checkpoint_interval = 0;
    s.eval_interval = 0;  // only the final evaluation
    const RemainingWork w = remaining_work(s, 10);
    EXPECT_EQ(w.checkpoints, 0);
    EXPECT_EQ(w.eval_batches, 40);
}

TEST(RemainingWork, OnlyBetterEvaluatesAtACheckpointThatHasNoEvaluationOfItsOwn) {
    RunSchedule s = schedule();
    s.only_better = true;
    // Checkpoints at 30, 60 and 90 evaluate first (no evaluation falls on them); 100 has the
    // final one.
    EXPECT_EQ(remaining_work(s, 10).eval_batches, 3 * 10 + 40 + 3 * 10);
    // Every 50 steps: 50 shares step 50's periodic evaluation, 100 the final one.
    s.checkpoint_interval = 50;
    EXPECT_EQ(remaining_work(s, 10).eval_batches, 3 * 10 + 40);
    // Every 10 steps: those at 20 to 90 but 50 evaluate first.
    s.checkpoint_interval = 10;
    EXPECT_EQ(remaining_work(s, 11).eval_batches, 3 * 10 + 40 + 7 * 10);
}

TEST(RunEta, StepsAtTheirMeanTimePlusTheEvaluationsAndCheckpointsStillToCome) {
    // A validation batch holds 1.5 steps' tokens; a checkpoint about 1 GB.
    RunEta eta(1.5, 1000000000);
    const RemainingWork left{5, 10, 1};
    // 10 steps in 20 s: 2 s a step. Before any evaluation a batch costs a forward pass of its
    // tokens, a third of 1.5 steps: 1 s; before any checkpoint 1 GB at 500 MB/s: 2 s.
    EXPECT_NEAR(*eta.eta(20, 10, left), 5 * 2 + 10 * 1 + 1 * 2, 1e-9);
    // An evaluation of 4 batches took 12 s, a checkpoint 3 s: 20 steps in 55 s are still 2 s a
    // step; a batch now costs 3 s, a checkpoint 3 s.
    eta.add_evaluation(4, 12);
    eta.add_checkpoint(3);
    EXPECT_NEAR(*eta.eta(55, 20, left), 5 * 2 + 10 * 3 + 1 * 3, 1e-9);
    // Means over all so far: 20 s for 10 batches, 8 s for 2 checkpoints; 30 steps in 88 s.
    eta.add_evaluation(6, 8);
    eta.add_checkpoint(5);
    EXPECT_NEAR(*eta.eta(88, 30, left), 5 * 2 + 10 * 2 + 1 * 4, 1e-9);
    // Nothing left: no ETA.
    EXPECT_FALSE(eta.eta(88, 30, RemainingWork{}).has_value());
}

}  // namespace
}  // namespace meshlm

// A run's ETA: the training steps left at the mean step time, plus the evaluations and
// checkpoints still to come, each at the time the ones so far took (an evaluation per
// validation batch, since the final one may be larger). Before the first evaluation a batch is
// taken to cost a forward pass of its tokens, a third of a training step's work per token;
// before the first checkpoint, its bytes at 500 MB/s. The step time leaves out the time spent
// evaluating and checkpointing, which the ETA adds back where it is still to come.
//
// exports: RunSchedule, RemainingWork, remaining_work, RunEta
#pragma once

#include <cstdint>
#include <optional>

namespace meshlm {

// When a run evaluates and checkpoints.
struct RunSchedule {
    long steps = 0;                // train.steps
    long eval_interval = 0;        // log.eval_interval; 0 = only the final evaluation
    bool evaluates = false;        // there is a validation split (not synthetic data)
    long eval_batches = 0;         // batches of a periodic evaluation
    long final_eval_batches = 0;   // batches of the final one
    long checkpoint_interval = 0;  // checkpoint.interval (and at the end); 0 = never
    bool only_better = false;      // checkpoint.only_better: a due checkpoint evaluates first
};

struct RemainingWork {
    long steps = 0;
    long eval_batches = 0;  // over every evaluation still to come
    long checkpoints = 0;
};

// What is left once step `done` (1-based) has trained: its own evaluation and checkpoint come
// after its log line, so they are counted.
RemainingWork remaining_work(const RunSchedule& s, long done);

class RunEta {
  public:
    // eval_batch_steps: a validation batch's tokens over a training step's (both over every
    // rank); checkpoint_bytes: about what a checkpoint writes.
    RunEta(double eval_batch_steps, std::uint64_t checkpoint_bytes);

    void add_evaluation(long batches, double seconds);
    void add_checkpoint(double seconds);

    // Seconds left when `steps` steps took `elapsed` seconds in this process, evaluations and
    // checkpoints included; nullopt when nothing is left.
    std::optional<double> eta(double elapsed, long steps, const RemainingWork& left) const;

  private:
    double eval_batch_steps_, checkpoint_guess_;
    double eval_seconds_ = 0, checkpoint_seconds_ = 0;
    long eval_batches_ = 0, checkpoints_ = 0;
};

}  // namespace meshlm

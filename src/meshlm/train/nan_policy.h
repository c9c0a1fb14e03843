// What the trainer does with a bad step (train.nan_policy; docs/reliability.md). A step is bad
// when its loss or global gradient norm is not finite, or when its loss spikes above
// train.spike_factor x the mean of the last train.spike_window good steps. The check costs one
// all-reduce of an int per step: the loss and the norm are already computed (the norm for
// clipping); only a non-finite step scans the tensors, to name the first non-finite one.
// A bad step's update is never applied (Learner::set_step_check); then
//   halt      checkpoint the last good step (the weights before the bad update), exit non-zero
//   skip      count the step as taken without its update (the batch is consumed)
//   rollback  reload the last checkpoint and skip the next train.rollback_skip_batches batches
//             (PaLM's recipe), at most train.max_rollbacks times, then halt
//
// exports: NanPolicy, parse_nan_policy, StepFault, StepGuard, first_nonfinite_site,
//          describe_step_fault
#pragma once

#include <cstddef>
#include <deque>
#include <string>

#include "meshlm/parallel/comm.h"
#include "meshlm/train/learner.h"
#include "meshlm/train/train_config.h"

namespace meshlm {

enum class NanPolicy { halt, skip, rollback };

// Throws InvalidInput naming train.nan_policy and its valid values.
NanPolicy parse_nan_policy(const std::string& name);
const char* nan_policy_name(NanPolicy p);

// Why a step's update was refused (ordered: the larger wins when ranks disagree).
enum class StepFault { none = 0, spike = 1, non_finite = 2 };
const char* step_fault_name(StepFault f);  // "spike", "non_finite"

class StepGuard {
  public:
    StepGuard(const TrainConfig& tc, Comm& world);

    // The verdict on a step before its update. Collective over `world` (every rank calls it at
    // the same point, gets the same answer). A good step's loss joins the running mean.
    StepFault check(float loss, float grad_norm);
    // The running mean the last check measured against, and how many steps it holds.
    double mean() const { return last_mean_; }
    std::size_t count() const { return recent_.size(); }
    double factor() const { return factor_; }
    // After a rollback: the steps that left the run leave the mean.
    void clear() { recent_.clear(); }

  private:
    Comm& world_;
    double factor_;
    std::size_t window_;
    std::deque<double> recent_;  // losses of the last good steps, oldest first
    double last_mean_ = 0;
};

// The first tensor holding a non-finite value, over every rank (collective over `world`):
// "parameter NAME", else "the loss (forward pass)" when `loss` is not finite, else
// "gradient of NAME", else "none found" (a non-finite norm of finite gradients: an overflow).
std::string first_nonfinite_site(Comm& world, Learner& learner, float loss);

// One line on a bad step: "step 7: non-finite loss 5.71 / gradient norm nan; first non-finite
// tensor: gradient of wte" or "step 7: loss spike: 9.1 > 2 x 4.05, the mean of the last 50
// steps (train.spike_factor)".
std::string describe_step_fault(StepFault fault, long step, const StepStats& st,
                                const StepGuard& guard, const std::string& site);

}  // namespace meshlm

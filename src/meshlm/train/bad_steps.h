// What a run does with a step whose update was refused (train.nan_policy; nan_policy.h says
// when a step is bad): says why, then halts with a checkpoint of the step before it, skips the
// update, or rolls back to the newest checkpoint and skips the batches after it.
//
// exports: BadSteps
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include "meshlm/parallel/mesh.h"
#include "meshlm/train/checkpoint_policy.h"
#include "meshlm/train/learner.h"
#include "meshlm/train/nan_policy.h"
#include "meshlm/train/run_progress.h"
#include "meshlm/train/step_batches.h"
#include "meshlm/train/step_report.h"
#include "meshlm/train/train_data.h"

namespace meshlm {

class BadSteps {
  public:
    // Installs the guard as `learner`'s step check (and train.debug_inject_nan_step).
    BadSteps(const TrainJob& job, const DeviceMesh& mesh, Learner& learner, TrainData& data,
             StepBatches& batches, RunProgress& progress, CheckpointPolicy& checkpoints,
             StepReporter& report, std::ostream& out);
    BadSteps(const BadSteps&) = delete;
    BadSteps& operator=(const BadSteps&) = delete;

    // Why the last step's update was refused (none when it was applied).
    StepFault fault() const { return fault_; }
    long skipped() const { return skipped_; }

    // Step `done` (1-based) was refused: throws (halt), returns nullopt (skip: the step counts
    // as taken) or the step of the checkpoint it rolled back to. Collective.
    std::optional<long> on_bad_step(long done, const StepStats& st);

  private:
    [[noreturn]] void halt(long done, const std::string& what, const std::string& why);
    long roll_back(const std::string& dir);

    const TrainJob& job_;
    const DeviceMesh& mesh_;
    Learner& learner_;
    TrainData& data_;
    StepBatches& batches_;
    RunProgress& progress_;
    CheckpointPolicy& checkpoints_;
    StepReporter& report_;
    std::ostream& out_;
    NanPolicy policy_;
    StepGuard guard_;
    StepFault fault_ = StepFault::none;
    long skipped_ = 0;
    int rollbacks_ = 0;
};

}  // namespace meshlm

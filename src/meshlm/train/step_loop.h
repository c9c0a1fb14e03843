// The training steps of a run, from where it starts to train.steps: each step's rows, the
// update (refused ones handled by BadSteps), and after it, as due: the log line with its ETA,
// an evaluation (periodic, or the final one), the record to the sinks, a stop on a signal
// (every rank after the same step, with a checkpoint) and a checkpoint. Nothing here costs a
// step more than a clock read; evaluations and checkpoints are timed for the ETA.
//
// exports: RunParts, StepLoop
#pragma once

#include <chrono>
#include <iosfwd>

#include "meshlm/train/bad_steps.h"
#include "meshlm/train/checkpoint_policy.h"
#include "meshlm/train/diagnostics.h"
#include "meshlm/train/learner.h"
#include "meshlm/train/run_eta.h"
#include "meshlm/train/run_progress.h"
#include "meshlm/train/step_batches.h"
#include "meshlm/train/step_report.h"
#include "meshlm/train/stop_signal.h"
#include "meshlm/train/train_meshes.h"
#include "meshlm/train/validation.h"

namespace meshlm {

// What the loop works with; all outlive it.
struct RunParts {
    const TrainJob& job;
    TrainMeshes& meshes;
    Learner& learner;
    StepBatches& batches;
    Validation& validation;
    CheckpointPolicy& checkpoints;
    BadSteps& bad_steps;
    StepReporter& report;
    RunProgress& progress;
    RunEta& eta;
    const RunSchedule& schedule;
    long final_eval_batches;  // the final evaluation's, as evaluate() takes it (0 = all)
    std::ostream& out;
};

class StepLoop {
  public:
    // Catches SIGINT / SIGTERM from here on (stop_signal.h).
    explicit StepLoop(const RunParts& parts)
        : p_(parts), diag_(parts.job.log.diag_interval, parts.out) {}

    // Trains into `result` (losses, validation loss); false when a stop signal ended the run
    // (its checkpoint written and the resume command said).
    bool run(TrainResult& result);

  private:
    using Clock = std::chrono::steady_clock;

    // What a step records beside its update (log.coord_interval, log.diag_interval).
    struct Probes {
        bool coord = false, diag = false;
    };
    // After step `done` (1-based) trained on rows of `len` tokens: logging, evaluation, the
    // stop check and the checkpoint. False when stopped.
    bool after_step(long done, const StepStats& st, int len, std::uint64_t bytes, Probes probes,
                    TrainResult& result);
    void log_step(long done, StepMetrics& m, const StepStats& st, int len, std::uint64_t bytes);
    EvalResult evaluate(long max_batches, const char* what);
    bool stop_requested(long done);

    RunParts p_;
    StopSignals stop_;
    Diagnostics diag_;
    Clock::time_point train_start_, interval_start_;
    long interval_tokens_ = 0;  // trained since the last report
};

}  // namespace meshlm

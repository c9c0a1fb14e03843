// When a run writes checkpoints, and the writing: every checkpoint.interval steps and at the
// end; with checkpoint.only_better only when the validation loss improved on the best so far;
// a failed write stops the run or, with checkpoint.on_error continue, warns and trains on
// (checkpoint_failure.h). Several ranks write their own shards, one process the single-file
// format. Each write's time goes to the ETA.
//
// exports: CheckpointPolicy
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include "meshlm/parallel/mesh.h"
#include "meshlm/train/learner.h"
#include "meshlm/train/run_eta.h"
#include "meshlm/train/run_progress.h"
#include "meshlm/train/train_data.h"
#include "meshlm/train/trainer.h"
#include "meshlm/train/weight_average.h"

namespace meshlm {

class CheckpointPolicy {
  public:
    // `progress` is read at each write and its last_saved set; `run_id` goes into every
    // checkpoint; `eta` gets each write's time; `average`'s window is saved with each.
    CheckpointPolicy(const TrainJob& job, const DeviceMesh& mesh, Learner& learner,
                     const TrainData& data, RunProgress& progress, std::string run_id, RunEta& eta,
                     WeightAverage& average, std::ostream& out);

    // About what a checkpoint of `learner` takes on disk.
    static std::uint64_t bytes_estimate(const TrainJob& job, Learner& learner);

    // Step `done` (1-based) is a checkpoint.interval step or the last.
    bool due(long done) const;
    // Writes the checkpoint of `step` (collective); false when it failed and on_error is
    // continue. `must`: the run stops after it anyway, so a failure always throws.
    bool save(long step, bool must);
    // A due step: writes, unless checkpoint.only_better and the validation loss (`val`, this
    // step's evaluation, else `evaluate()`) did not improve on the best so far (which it says).
    void at_due_step(long done, std::optional<double> val, const std::function<double()>& evaluate);

    // train.average's window, saved with each checkpoint.
    WeightAverage& average() { return average_; }
    // The newest checkpoint this process wrote ("" = none).
    const std::string& last_checkpoint() const { return last_; }

  private:
    std::string write(const TrainerState& st);

    const TrainJob& job_;
    const DeviceMesh& mesh_;
    Learner& learner_;
    const TrainData& data_;
    RunProgress& progress_;
    std::string run_id_;
    RunEta& eta_;
    WeightAverage& average_;
    std::ostream& out_;
    std::uint64_t bytes_;  // about what one checkpoint takes (for the disk-full message)
    std::string last_;
};

}  // namespace meshlm

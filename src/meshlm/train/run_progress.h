// Where a run stands, as its checkpoints record it, and where it starts: a resumed run at its
// checkpoint's step with that checkpoint's weights and optimizer state; a warm start
// (model.init_from) and a fresh run at step 0.
//
// exports: RunProgress, start_weights
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>

#include "meshlm/io/checkpoint.h"
#include "meshlm/parallel/mesh.h"
#include "meshlm/train/learner.h"
#include "meshlm/train/trainer.h"

namespace meshlm {

struct RunProgress {
    long start_step = 0;             // the step this process started at
    std::uint64_t tokens_seen = 0;   // over every rank, since the run's step 0
    std::optional<double> best_val;  // checkpoint.only_better's best validation loss so far
    // Synthetic batches skipped by rollbacks (train.nan_policy): step s draws its batch as
    // step s + batch_offset.
    long batch_offset = 0;
    long last_saved = -1;  // the step of the newest checkpoint this process knows to exist
};

// Loads the run's first weights into `learner`: `resume`'s checkpoint (each rank its own shard
// when it was written at this mesh), model.init_from's weights (fresh optimizer and schedule)
// or an initialization by train.seed. Collective over `mesh`. Says which on `out`.
RunProgress start_weights(const TrainJob& job, const std::optional<TrainerState>& resume,
                          Learner& learner, const DeviceMesh& mesh, std::ostream& out);

}  // namespace meshlm

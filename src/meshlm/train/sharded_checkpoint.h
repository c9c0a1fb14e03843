// Sharded checkpoints of a multi-rank run (format in shard_format.h): each rank writes its own
// shard, nothing is gathered on one rank, and a rank resuming at the same (data, model) mesh
// reads only its own file. The ranks must share a filesystem (the run directory).
//
// exports: write_sharded_checkpoint, load_learner_checkpoint
#pragma once

#include <string>

#include "meshlm/io/checkpoint.h"
#include "meshlm/io/checkpoint_config.h"
#include "meshlm/model/model_config.h"
#include "meshlm/parallel/mesh.h"
#include "meshlm/train/learner.h"

namespace meshlm {

// Collective over mesh.world(). Rank 0 prepares the staging directory; every rank writes and
// syncs its shard of `learner`; rank 0 gathers the files' sizes and CRC-32s, writes layout.json
// and trainer.json and publishes the checkpoint (rename, `latest`, rotation: checkpoint.h). A
// failure on any rank fails every rank and leaves no half checkpoint. Returns the directory.
std::string write_sharded_checkpoint(const DeviceMesh& mesh, Learner& learner,
                                     const ModelConfig& model, int zero_stage,
                                     const std::string& run_dir, const TrainerState& state,
                                     const CheckpointConfig& cfg);

// Loads checkpoint `dir` (`state` = read_checkpoint(dir)) into `learner` (collective over the
// mesh): a sharded checkpoint of this very (data, model) mesh from each rank's own shard (any
// ZeRO stage), anything else through the single-process layout, of which each rank keeps its
// part. Every file is validated before anything is loaded; errors name the file. Returns true
// when each rank read only its own shard.
bool load_learner_checkpoint(const std::string& dir, const TrainerState& state,
                             const ModelConfig& model, Learner& learner, const DeviceMesh& mesh);

}  // namespace meshlm

// A whole training state written as the checkpoint a run of any (data, model, ZeRO) layout would
// have written (`meshlm reshard`), by one process: the formats of checkpoint.h and
// shard_format.h, nothing collective.
#pragma once

#include <string>

#include "meshlm/io/checkpoint.h"
#include "meshlm/io/checkpoint_config.h"
#include "meshlm/model/model_config.h"

namespace meshlm {

// Writes `full` under run_dir/checkpoints as a run at (data, model_ranks, zero_stage) would:
// the single-file format for 1 x 1, shard files otherwise. Returns the checkpoint directory.
std::string write_checkpoint_for_layout(const std::string& run_dir, const TrainerState& state,
                                        const ModelConfig& model, const FullTrainingState& full,
                                        int data, int model_ranks, int zero_stage,
                                        const CheckpointConfig& cfg);

}  // namespace meshlm

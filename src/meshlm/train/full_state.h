// A checkpoint's whole training state as a given optimizer keeps it: the formats (io/checkpoint.h)
// read whatever slots and statistics they are asked for; which ones an optimizer has is the
// optimizer's fact (optim/), so the two meet here. What `meshlm reshard` and the tests read.
#pragma once

#include <string>
#include <vector>

#include "meshlm/io/checkpoint.h"
#include "meshlm/model/model_config.h"
#include "meshlm/optim/optim_config.h"

namespace meshlm {

// The state of optimizer `optim` in checkpoint `dir` of either format (its slots and statistics;
// optimizer_slots, adafactor_plan), in the single-process layout.
FullTrainingState read_full_state(const std::string& dir, const ModelConfig& model,
                                  const OptimConfig& optim = OptimConfig());

// The statistics an optimizer over the whole layout of `model` keeps (Adafactor's; else none).
std::vector<StateTensor> optimizer_stat_tensors(const ModelConfig& model, const OptimConfig& optim);

}  // namespace meshlm

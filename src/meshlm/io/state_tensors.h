// An optimizer's whole-tensor statistics (Adafactor's factored second moments, core/
// state_tensor.h) in the safetensors files of a checkpoint: the single-file optimizer.safetensors
// and, being the same on every rank, every shard file of a sharded one.
#pragma once

#include <string>
#include <vector>

#include "meshlm/core/state_tensor.h"
#include "meshlm/io/safetensors.h"

namespace meshlm {

// Appends the tensors `stats` (laid out as `tensors` say) to a file's tensor list.
void add_stat_tensors(std::vector<SafetensorsTensor>& out, const std::vector<StateTensor>& tensors,
                      const float* stats);
// Whether `tensors` hold factored statistics of parameter `name` (then the single-file format
// stores no exp_avg_sq.<name>: its flat slot is zero there).
bool has_factored_stats(const std::vector<StateTensor>& tensors, const std::string& name);
// Checks that `f` holds every one of `tensors` as f32 of its shape (InvalidInput naming the file
// and the tensor otherwise), then copies them into `stats`.
void read_stat_tensors(const SafetensorsFile& f, const std::vector<StateTensor>& tensors,
                       float* stats);

}  // namespace meshlm

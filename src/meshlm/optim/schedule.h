// Learning-rate schedules: linear warmup, then cosine or linear decay to end_lr, or constant.
#pragma once

#include "meshlm/optim/optim_config.h"

namespace meshlm {

// Learning rate for optimizer step `step` (0-based) of `total_steps`.
//   step < warmup: lr * (step + 1) / warmup
//   then p = (step - warmup) / max(1, total - warmup):
//   cosine: end + (lr - end) * (1 + cos(pi p)) / 2;  linear: lr + (end - lr) p;  constant: lr
float lr_at(const OptimConfig& cfg, long step, long total_steps);

}  // namespace meshlm

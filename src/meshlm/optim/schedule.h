// Learning-rate schedules: linear warmup, then a decay to end_lr by decay_steps, then flat.
#pragma once

#include "meshlm/optim/optim_config.h"

namespace meshlm {

// Learning rate for optimizer step `step` (0-based) of `total_steps`. With W = warmup_steps,
// s = warmup_start, H = decay_steps (0: total_steps) and t = min(step, H):
//   step < W:      lr * (s + (1 - s) * (step + 1) / W)
//   then, p = (t - W) / max(1, H - W):
//   cosine:        end + (lr - end) * (1 + cos(pi p)) / 2
//   linear:        lr + (end - lr) p
//   inverse_sqrt:  max(end, lr * sqrt(max(W, 1) / (t + 1)))
//   constant:      lr
// Past H every schedule stays at the value it reached there (end_lr for cosine and linear).
float lr_at(const OptimConfig& cfg, long step, long total_steps);

// The decay factor for weight decay `wd` at learning rate `lr_t` under cfg.wd_mode, expressed as
// the coefficient the optimizers multiply by lr_t (so coupled: wd; independent: wd / lr).
float decay_per_lr(const OptimConfig& cfg, float wd);

}  // namespace meshlm

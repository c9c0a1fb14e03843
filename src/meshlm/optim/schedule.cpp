#include "meshlm/optim/schedule.h"

#include <algorithm>
#include <cmath>

#include "meshlm/core/error.h"

namespace meshlm {

float lr_at(const OptimConfig& cfg, long step, long total_steps) {
    const double lr = cfg.lr, end = cfg.end_lr, W = cfg.warmup_steps;
    if (step < cfg.warmup_steps) {
        const double s = cfg.warmup_start;
        return static_cast<float>(lr * (s + (1 - s) * static_cast<double>(step + 1) / W));
    }
    if (cfg.schedule == "constant") return cfg.lr;
    const long horizon = cfg.decay_steps > 0 ? cfg.decay_steps : total_steps;
    const long t = std::min(step, horizon);
    const long span = horizon - cfg.warmup_steps;
    double p = static_cast<double>(t - cfg.warmup_steps) / static_cast<double>(span > 1 ? span : 1);
    p = std::clamp(p, 0.0, 1.0);
    if (cfg.schedule == "cosine")
        return static_cast<float>(end + 0.5 * (lr - end) * (1 + std::cos(M_PI * p)));
    if (cfg.schedule == "linear") return static_cast<float>(lr + (end - lr) * p);
    if (cfg.schedule == "inverse_sqrt")
        return static_cast<float>(
            std::max(end, lr * std::sqrt(std::max(W, 1.0) / static_cast<double>(t + 1))));
    MESHLM_INVALID("optim.schedule must be cosine, linear, inverse_sqrt or constant (got '",
                   cfg.schedule, "')");
}

float decay_per_lr(const OptimConfig& cfg, float wd) {
    return cfg.wd_mode == "independent" ? wd / cfg.lr : wd;
}

}  // namespace meshlm

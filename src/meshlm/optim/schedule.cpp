#include "meshlm/optim/schedule.h"

#include <cmath>

#include "meshlm/core/error.h"

namespace meshlm {

float lr_at(const OptimConfig& cfg, long step, long total_steps) {
    const double lr = cfg.lr, end = cfg.end_lr;
    if (step < cfg.warmup_steps) return static_cast<float>(lr * (step + 1) / cfg.warmup_steps);
    if (cfg.schedule == "constant") return cfg.lr;
    long span = total_steps - cfg.warmup_steps;
    double p =
        static_cast<double>(step - cfg.warmup_steps) / static_cast<double>(span > 1 ? span : 1);
    if (p > 1) p = 1;
    if (cfg.schedule == "cosine")
        return static_cast<float>(end + 0.5 * (lr - end) * (1 + std::cos(M_PI * p)));
    if (cfg.schedule == "linear") return static_cast<float>(lr + (end - lr) * p);
    MESHLM_INVALID("optim.schedule must be cosine, linear or constant (got '", cfg.schedule, "')");
}

}  // namespace meshlm

#include "meshlm/optim/optimizer.h"

#include <cmath>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/optim/schedule.h"

namespace meshlm {

int optimizer_state_count(const std::string& name) {
    if (name == "adamw") return 2;
    if (name == "lion") return 1;
    MESHLM_INVALID("optim.name must be adamw or lion (got '", name, "')");
}

Optimizer::Optimizer(const OptimConfig& cfg, std::vector<ParamGroup> groups,
                     std::size_t total_floats)
    : cfg_(cfg),
      lion_(optimizer_state_count(cfg.name) == 1),
      groups_(std::move(groups)),
      m_(total_floats),
      v_(lion_ ? 0 : total_floats) {}

void Optimizer::step(float* params, const float* grads, float lr) {
    ++step_;
    for (const ParamGroup& g : groups_) {
        // The kernels decay by their lr * wd: coupled decay follows the group's learning rate
        // (lr_g wd), independent decay only the schedule (lr_t / lr * wd, whatever lr_scale).
        const float lr_g = lr * g.lr_scale;
        const bool independent = cfg_.wd_mode == "independent";
        const float wd_g =
            g.decay ? decay_per_lr(cfg_, cfg_.weight_decay) / (independent ? g.lr_scale : 1.f)
                    : 0.f;
        if (lion_)
            kernels::lion(params + g.offset, grads + g.offset, m_.data() + g.offset, g.numel, lr_g,
                          cfg_.beta1, cfg_.beta2, wd_g);
        else
            kernels::adamw(params + g.offset, grads + g.offset, m_.data() + g.offset,
                           v_.data() + g.offset, g.numel, lr_g, cfg_.beta1, cfg_.beta2,
                           cfg_.eps * g.eps_scale, wd_g, step_);
    }
}

void apply_clip(const OptimConfig& cfg, float* grads, std::size_t n, float norm) {
    const float max = cfg.grad_clip;
    if (max <= 0) return;
    if (cfg.clip_mode == "value")
        kernels::clamp(grads, max, n);
    else if (norm > max)
        kernels::scale(grads, max / (norm + 1e-6f), n);
}

float clip_gradients(const OptimConfig& cfg, float* grads, std::size_t n) {
    const float norm = static_cast<float>(std::sqrt(kernels::sum_squares(grads, n)));
    apply_clip(cfg, grads, n, norm);
    return norm;
}

}  // namespace meshlm

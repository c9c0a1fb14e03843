#include "meshlm/optim/adamw.h"

#include <cmath>

#include "meshlm/kernels/kernels.h"

namespace meshlm {

AdamW::AdamW(const OptimConfig& cfg, std::vector<ParamGroup> groups, std::size_t total_floats)
    : cfg_(cfg), groups_(std::move(groups)), m_(total_floats), v_(total_floats) {}

void AdamW::step(float* params, const float* grads, float lr) {
    ++step_;
    for (const ParamGroup& g : groups_)
        kernels::adamw(params + g.offset, grads + g.offset, m_.data() + g.offset,
                       v_.data() + g.offset, g.numel, lr, cfg_.beta1, cfg_.beta2, cfg_.eps,
                       g.decay ? cfg_.weight_decay : 0.f, step_);
}

float clip_grad_norm(float* grads, std::size_t n, float max_norm) {
    const float norm = static_cast<float>(std::sqrt(kernels::sum_squares(grads, n)));
    if (max_norm > 0 && norm > max_norm) kernels::scale(grads, max_norm / (norm + 1e-6f), n);
    return norm;
}

}  // namespace meshlm

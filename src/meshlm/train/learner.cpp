#include "meshlm/train/learner.h"

#include <cstring>

#include "meshlm/core/error.h"
#include "meshlm/optim/schedule.h"

namespace meshlm {

std::vector<ParamGroup> decay_groups(const ParamLayout& layout, const std::string& decay_mask) {
    if (decay_mask != "matrices" && decay_mask != "all" && decay_mask != "none")
        MESHLM_INVALID("optim.decay_mask must be matrices, all or none (got '", decay_mask, "')");
    std::vector<ParamGroup> groups;
    for (const ParamSlice& s : layout.slices()) {
        bool decay = decay_mask == "all" || (decay_mask == "matrices" && s.is_matrix());
        // Merge neighbours with the same flag: fewer, longer optimizer sweeps.
        if (!groups.empty() && groups.back().decay == decay &&
            groups.back().offset + groups.back().numel <= s.offset) {
            groups.back().numel = s.offset + s.numel - groups.back().offset;
            continue;
        }
        groups.push_back({s.offset, s.numel, decay});
    }
    return groups;
}

Learner::Learner(const ModelConfig& model, const OptimConfig& optim, int batch, int seq,
                 long total_steps)
    : model_cfg_(model),
      optim_cfg_(optim),
      batch_(batch),
      seq_(seq),
      total_steps_(total_steps),
      model_(model, batch, seq),
      params_(model_.layout().total()),
      grads_(model_.layout().total()),
      optim_(optim, decay_groups(model_.layout(), optim.decay_mask), model_.layout().total()) {}

void Learner::init_params(std::uint64_t seed) {
    gpt2_init(model_cfg_, model_.layout(), params_.data(), seed);
}

StepStats Learner::train_step(const std::int32_t* tokens, const std::int32_t* targets, int micro,
                              int B, int T) {
    const std::size_t per = static_cast<std::size_t>(B) * T;
    std::memset(grads_.data(), 0, grads_.bytes());
    // The gradient of the mean over all scored targets of the step: every micro-batch's
    // per-token gradients are scaled by 1 / (scored targets of the whole step).
    std::size_t scored = 0;
    for (std::size_t i = 0; i < per * micro; ++i) scored += targets[i] >= 0;
    const float grad_scale = scored ? 1.f / static_cast<float>(scored) : 0.f;
    double loss = 0;
    for (int m = 0; m < micro; ++m) {
        const std::int32_t* tg = targets + m * per;
        std::size_t n = 0;
        for (std::size_t i = 0; i < per; ++i) n += tg[i] >= 0;
        if (n == 0) continue;
        loss += static_cast<double>(
                    model_.forward(params_.data(), tokens + m * per, tg, B, T, grad_scale)) *
                static_cast<double>(n);
        model_.backward(params_.data(), grads_.data());
    }
    StepStats st;
    st.loss = scored ? static_cast<float>(loss / static_cast<double>(scored)) : 0.f;
    st.grad_norm = clip_grad_norm(grads_.data(), grads_.size(), optim_cfg_.grad_clip);
    st.lr = lr_at(optim_cfg_, optim_.steps_taken(), total_steps_);
    optim_.step(params_.data(), grads_.data(), st.lr);
    return st;
}

float Learner::eval_loss(const std::int32_t* tokens, const std::int32_t* targets) {
    return model_.forward(params_.data(), tokens, targets, batch_, seq_, 0.f);
}

}  // namespace meshlm

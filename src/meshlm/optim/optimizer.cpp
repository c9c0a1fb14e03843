#include "meshlm/optim/optimizer.h"

#include <algorithm>
#include <cmath>

#include "meshlm/core/error.h"
#include "meshlm/core/trace.h"
#include "meshlm/kernels/device.h"
#include "meshlm/kernels/ops/adamw.h"
#include "meshlm/kernels/ops/clip.h"
#include "meshlm/kernels/ops/lion.h"
#include "meshlm/optim/schedule.h"

namespace meshlm {

OptimizerSlots optimizer_slots(const std::string& name) {
    if (name == "adamw") return {true, true};
    if (name == "lion") return {true, false};
    if (name == "adafactor") return {false, true};
    MESHLM_INVALID("optim.name must be adamw, lion or adafactor (got '", name, "')");
}

int optimizer_state_count(const std::string& name) {
    return optimizer_slots(name).count();
}

namespace {

// The elements of unfactored tensors in a plan's pieces: Adafactor's packed second moments.
std::size_t unfactored_floats(const AdafactorPlan& plan) {
    std::size_t n = 0;
    for (const AdafactorPiece& p : plan.pieces)
        if (!plan.tensors[p.tensor].factored) n += p.numel;
    return n;
}

}  // namespace

Optimizer::Optimizer(const OptimConfig& cfg, std::vector<ParamGroup> groups,
                     std::size_t total_floats, AdafactorPlan plan, bool flat, Device device)
    : cfg_(cfg),
      slots_(optimizer_slots(cfg.name)),
      total_floats_(total_floats),
      packed_(cfg.name == "adafactor" && !flat),
      groups_(std::move(groups)),
      device_(device),
      m_(device, slots_.m ? total_floats : 0),
      v_(device, slots_.v ? (packed_ ? unfactored_floats(plan) : total_floats) : 0) {
    if (cfg_.name != "adafactor") return;
    plan_ = std::move(plan);
    std::size_t packed = 0;
    for (const AdafactorPiece& p : plan_.pieces) {
        piece_v_.push_back(packed_ ? packed : p.offset);
        if (!plan_.tensors[p.tensor].factored) packed += p.numel;
    }
    const std::size_t tensors = plan_.tensors.size();
    stats_ = kernels::FloatArray(device, plan_.stat_floats);
    scales_ = kernels::FloatArray(device, plan_.stat_floats);
    if (device != Device::cpu) means_ = Buffer<float>(plan_.stat_floats);
    sums_ = Buffer<double>(plan_.stat_floats + 2 * tensors);
    // A piece lies in one slice, so in one group (shard_groups cuts both at the same bounds).
    for (const AdafactorPiece& p : plan_.pieces) {
        std::size_t g = 0;
        while (g < groups_.size() &&
               !(groups_[g].offset <= p.offset && p.offset < groups_[g].offset + groups_[g].numel))
            ++g;
        MESHLM_CHECK(
            g < groups_.size() && p.offset + p.numel <= groups_[g].offset + groups_[g].numel,
            "an Adafactor piece at ", p.offset, " is not inside one parameter group");
        piece_group_.push_back(g);
    }
}

std::size_t optimizer_state_bytes(const OptimConfig& cfg, std::size_t flat_floats,
                                  const AdafactorPlan& plan) {
    if (cfg.name != "adafactor")
        return optimizer_state_count(cfg.name) * flat_floats * sizeof(float);
    // packed second moments, statistics and factors; sums of them and per tensor
    return (unfactored_floats(plan) + 2 * plan.stat_floats) * sizeof(float) +
           (plan.stat_floats + 2 * plan.tensors.size()) * sizeof(double);
}

void Optimizer::export_v(float* flat) const {
    std::fill_n(flat, total_floats_, 0.f);
    for (std::size_t k = 0; k < plan_.pieces.size(); ++k) {
        const AdafactorPiece& p = plan_.pieces[k];
        if (!plan_.tensors[p.tensor].factored)
            kernels::copy(meshlm::flat(flat + p.offset, p.numel, Device::cpu),
                          meshlm::flat(v_.data() + piece_v_[k], p.numel, device_));
    }
}

void Optimizer::import_v(const float* flat) {
    for (std::size_t k = 0; k < plan_.pieces.size(); ++k) {
        const AdafactorPiece& p = plan_.pieces[k];
        if (!plan_.tensors[p.tensor].factored)
            kernels::copy(meshlm::flat(v_.data() + piece_v_[k], p.numel, device_),
                          meshlm::flat(flat + p.offset, p.numel, Device::cpu));
    }
}

std::size_t Optimizer::state_bytes() const {
    return m_.bytes() + v_.bytes() + stats_.bytes() + scales_.bytes() + means_.bytes() +
           sums_.bytes();
}

float Optimizer::group_decay(const ParamGroup& g) const {
    // The kernels decay by their lr * wd: coupled decay follows the group's learning rate
    // (lr_g wd), independent decay only the schedule (lr_t / lr * wd, whatever lr_scale).
    if (!g.decay) return 0.f;
    const bool independent = cfg_.wd_mode == "independent";
    return decay_per_lr(cfg_, cfg_.weight_decay) / (independent ? g.lr_scale : 1.f);
}

void Optimizer::step(float* params, const float* grads, float lr, float grad_scale) {
    MESHLM_CHECK(grad_scale == 1.f || folds_grad_scale(), "optimizer ", cfg_.name,
                 " takes its gradients scaled (grad_scale ", grad_scale, ")");
    ++step_;
    if (cfg_.name == "adafactor") return adafactor_step(params, grads, lr);
    for (const ParamGroup& g : groups_) {
        // Per block in a trace (log.profile_steps); Adafactor's passes span the tensors.
        TraceScope trace(g.layer >= 0 ? "optimizer block" : "optimizer embeddings and head",
                         g.layer);
        const float lr_g = group_lr(g, lr), wd_g = group_decay(g);
        const std::size_t n = g.numel;
        const Device d = device_;
        const Tensor p = flat(params + g.offset, n, d), gr = flat(grads + g.offset, n, d);
        const Tensor m = flat(m_.data() + g.offset, n, d);
        if (!slots_.v) {
            ops::lion(p, gr, m,
                      {.lr = lr_g,
                       .beta1 = cfg_.beta1,
                       .beta2 = cfg_.beta2,
                       .weight_decay = wd_g,
                       .grad_scale = grad_scale});
            continue;
        }
        ops::adamw(p, gr, m, flat(v_.data() + g.offset, n, d),
                   {.lr = lr_g,
                    .beta1 = cfg_.beta1,
                    .beta2 = cfg_.beta2,
                    .eps = cfg_.eps * g.eps_scale,
                    .weight_decay = wd_g,
                    .step = step_,
                    .grad_scale = grad_scale});
    }
}

float apply_clip(const OptimConfig& cfg, float* grads, std::size_t n, float norm, bool fold,
                 Device device) {
    const float max = cfg.grad_clip;
    if (max <= 0) return 1.f;
    const Tensor g = flat(grads, n, device);
    if (cfg.clip_mode == "value") {
        ops::clamp(g, max);
    } else if (norm > max) {
        const float factor = max / (norm + 1e-6f);
        if (fold) return factor;
        ops::scale(g, factor);
    }
    return 1.f;
}

float clip_gradients(const OptimConfig& cfg, float* grads, std::size_t n, float* folded,
                     Device device) {
    const double sq = ops::sum_squares(flat(grads, n, device));
    const float norm = static_cast<float>(std::sqrt(sq));
    const float factor = apply_clip(cfg, grads, n, norm, folded != nullptr, device);
    if (folded) *folded = factor;
    return norm;
}

}  // namespace meshlm

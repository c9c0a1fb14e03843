// The optimizer over a flat parameter buffer: AdamW, Lion or Adafactor (optim.name). Its flat
// state buffers have the parameters' layout (AdamW: first and second moments; Lion: one
// momentum), so ZeRO shards and checkpoints them alike. Adafactor keeps per-tensor factored
// statistics, whole on every rank (adafactor_plan.h), and full second moments only for the
// elements of its unfactored tensors in its range, packed (checkpoints store them as a flat
// slot, exp_avg_sq, zero at the factored tensors: export_v / import_v). It needs sums over
// whole tensors: the caller that shards tensors over ranks supplies the sum over the ranks
// (set_tensor_sum). Weight decay applies per group (the trainer builds groups from the
// parameter registry and optim.decay_mask) and per optim.wd_mode.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "meshlm/core/buffer.h"
#include "meshlm/kernels/device_buffer.h"
#include "meshlm/optim/adafactor_plan.h"
#include "meshlm/optim/optim_config.h"

namespace meshlm {

struct ParamGroup {
    std::size_t offset, numel;  // a contiguous range of the flat buffer
    bool decay;                 // apply weight decay
    float lr_scale = 1.f;       // the group's learning rate is lr * lr_scale (optim.mup_rule)
    float eps_scale = 1.f;      // and Adam's eps * eps_scale (optim.mup_eps_scaling)
    int layer = -1;             // the block its tensors belong to (-1: embeddings, head)
};

// The flat per-parameter state buffers of optimizer `name`: AdamW exp_avg and exp_avg_sq, Lion
// exp_avg, Adafactor exp_avg_sq. Throws naming optim.name's valid values on another name.
struct OptimizerSlots {
    bool m, v;
    int count() const { return m + v; }
};
OptimizerSlots optimizer_slots(const std::string& name);
// optimizer_slots(name).count(): adamw 2, lion 1, adafactor 1.
int optimizer_state_count(const std::string& name);

// What Optimizer(cfg, groups, flat_floats, plan) allocates, without allocating it: the flat
// slots, Adafactor's packed second moments, statistics and scratch.
std::size_t optimizer_state_bytes(const OptimConfig& cfg, std::size_t flat_floats,
                                  const AdafactorPlan& plan);

// Adds per-tensor partial sums (in place, n doubles) over the ranks that share the tensors.
using TensorSum = std::function<void(double* sums, std::size_t n)>;

class Optimizer {
  public:
    // `plan`: Adafactor's tensors and pieces of this range (adafactor_plan over the same range
    // as the groups); ignored by the others. `flat`: Adafactor keeps its second moments as a
    // flat slot, v() (an optimizer that only carries state for checkpoints).
    // `device`: where the parameters, gradients and this optimizer's state live (Adafactor's
    // factored statistics too; only its sums, added over the ranks, are host doubles).
    Optimizer(const OptimConfig& cfg, std::vector<ParamGroup> groups, std::size_t total_floats,
              AdafactorPlan plan = {}, bool flat = false, Device device = Device::cpu);

    // One update with learning rate lr; increments the step count (bias correction uses it).
    // The gradients enter as grad_scale * grads (norm clipping's factor, see apply_clip); only
    // an optimizer that folds_grad_scale() takes a factor other than 1. Adafactor calls the
    // tensor sum twice, on every rank alike.
    void step(float* params, const float* grads, float lr, float grad_scale = 1.f);
    // AdamW and Lion apply a gradient scale as they read the gradients; Adafactor, whose passes
    // read them several times, takes them scaled.
    bool folds_grad_scale() const { return cfg_.name != "adafactor"; }

    long steps_taken() const { return step_; }
    // Resuming from a checkpoint: the state is restored through m() / v() / stats().
    void set_steps_taken(long steps) { step_ = steps; }
    Device device() const { return device_; }
    // The flat slots, on device().
    float* m() { return m_.size() ? m_.data() : nullptr; }  // nullptr: none (Adafactor)
    // nullptr: none (Lion), or packed (Adafactor, unless flat: see export_v)
    float* v() { return v_.size() && !packed_ ? v_.data() : nullptr; }
    // Adafactor's packed second moments to and from the flat slot of the range (total_floats
    // floats, zero outside the unfactored tensors' pieces).
    bool packed_v() const { return packed_; }
    void export_v(float* flat) const;
    void import_v(const float* flat);
    // Adafactor's factored statistics (plan.stats names them), on device(); empty for the others.
    float* stats() { return stats_.size() ? stats_.data() : nullptr; }
    const std::vector<StateTensor>& stat_tensors() const { return plan_.stats; }
    std::size_t stat_floats() const { return stats_.size(); }
    // Adafactor over tensors that other ranks hold parts of: how their sums are added up
    // (unset: this range holds whole tensors).
    void set_tensor_sum(TensorSum sum) { tensor_sum_ = std::move(sum); }
    std::size_t state_bytes() const;

  private:
    void adafactor_step(float* params, const float* grads, float lr);
    // Decays the factored statistics toward the summed sums and derives the update's factors.
    void adafactor_factors(const double* sums, float beta);
    Tensor piece(const float* base, std::size_t offset, std::size_t numel) const;
    // The group's learning rate and weight decay (as the kernels take it) at lr.
    float group_lr(const ParamGroup& g, float lr) const { return lr * g.lr_scale; }
    float group_decay(const ParamGroup& g) const;

    OptimConfig cfg_;
    OptimizerSlots slots_;
    std::size_t total_floats_;
    bool packed_;  // Adafactor's v_ holds the unfactored pieces only
    std::vector<ParamGroup> groups_;
    Device device_;
    kernels::FloatArray m_, v_;
    long step_ = 0;
    // Adafactor
    AdafactorPlan plan_;
    std::vector<std::size_t> piece_group_;  // the group of each piece
    std::vector<std::size_t> piece_v_;      // where each unfactored piece's v starts in v_
    kernels::FloatArray stats_, scales_;    // statistics; per row and column the update's factor
    Buffer<float> means_;                   // off the CPU: the statistics' new means, staged
    Buffer<double> sums_;                   // [stat_floats | param squares | update squares]
    TensorSum tensor_sum_;
};

// Clips grads by cfg.clip_mode at cfg.grad_clip (0 = off) given their global L2 norm `norm`:
// norm: scale by grad_clip / (norm + 1e-6) when norm > grad_clip (clip_grad_norm_'s factor);
// value: clamp every element to [-grad_clip, grad_clip]. With `fold` (the optimizer
// folds_grad_scale()), norm clipping's factor is returned for Optimizer::step instead of being
// applied, which saves a read and a write of every gradient; otherwise returns 1.
// `device`: where grads live.
float apply_clip(const OptimConfig& cfg, float* grads, std::size_t n, float norm, bool fold = false,
                 Device device = Device::cpu);
// The global L2 norm of grads, then apply_clip; returns the norm before clipping. With
// `folded`, apply_clip folds and its factor is stored there.
float clip_gradients(const OptimConfig& cfg, float* grads, std::size_t n, float* folded = nullptr,
                     Device device = Device::cpu);

}  // namespace meshlm

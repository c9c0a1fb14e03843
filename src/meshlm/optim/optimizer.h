// The optimizer over a flat parameter buffer: AdamW or Lion (optim.name). Its state buffers have
// the parameters' layout (AdamW: first and second moments; Lion: one momentum), so ZeRO shards
// and checkpoints them alike. Weight decay applies per group (the trainer builds groups from
// the parameter registry and optim.decay_mask) and per optim.wd_mode.
#pragma once

#include <cstddef>
#include <vector>

#include "meshlm/core/buffer.h"
#include "meshlm/optim/optim_config.h"

namespace meshlm {

struct ParamGroup {
    std::size_t offset, numel;  // a contiguous range of the flat buffer
    bool decay;                 // apply weight decay
    float lr_scale = 1.f;       // the group's learning rate is lr * lr_scale (optim.mup_rule)
    float eps_scale = 1.f;      // and Adam's eps * eps_scale (optim.mup_eps_scaling)
};

// State buffers per parameter for optimizer `name` (adamw 2, lion 1); throws on another name.
int optimizer_state_count(const std::string& name);

class Optimizer {
  public:
    Optimizer(const OptimConfig& cfg, std::vector<ParamGroup> groups, std::size_t total_floats);

    // One update with learning rate lr; increments the step count (bias correction uses it).
    void step(float* params, const float* grads, float lr);

    long steps_taken() const { return step_; }
    // Resuming from a checkpoint: the state is restored through m() / v().
    void set_steps_taken(long steps) { step_ = steps; }
    float* m() { return m_.data(); }
    float* v() { return v_.size() ? v_.data() : nullptr; }  // nullptr: no second moment (Lion)
    std::size_t state_bytes() const { return m_.bytes() + v_.bytes(); }

  private:
    OptimConfig cfg_;
    bool lion_;
    std::vector<ParamGroup> groups_;
    Buffer<float> m_, v_;
    long step_ = 0;
};

// Clips grads by cfg.clip_mode at cfg.grad_clip (0 = off) given their global L2 norm `norm`:
// norm: scale by grad_clip / (norm + 1e-6) when norm > grad_clip (clip_grad_norm_'s factor);
// value: clamp every element to [-grad_clip, grad_clip].
void apply_clip(const OptimConfig& cfg, float* grads, std::size_t n, float norm);
// The global L2 norm of grads, then apply_clip; returns the norm before clipping.
float clip_gradients(const OptimConfig& cfg, float* grads, std::size_t n);

}  // namespace meshlm

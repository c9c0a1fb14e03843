// AdamW over a flat parameter buffer. Moments are flat buffers with the parameters' layout;
// weight decay applies per group (the trainer builds groups from the parameter registry and
// optim.decay_mask).
#pragma once

#include <cstddef>
#include <vector>

#include "meshlm/core/buffer.h"
#include "meshlm/optim/optim_config.h"

namespace meshlm {

struct ParamGroup {
    std::size_t offset, numel;  // a contiguous range of the flat buffer
    bool decay;                 // apply weight decay
};

class AdamW {
  public:
    AdamW(const OptimConfig& cfg, std::vector<ParamGroup> groups, std::size_t total_floats);

    // One update with learning rate lr; increments the step count (bias correction uses it).
    void step(float* params, const float* grads, float lr);

    long steps_taken() const { return step_; }
    // Resuming from a checkpoint: the moments are restored through m() / v().
    void set_steps_taken(long steps) { step_ = steps; }
    float* m() { return m_.data(); }
    float* v() { return v_.data(); }
    std::size_t state_bytes() const { return m_.bytes() + v_.bytes(); }

  private:
    OptimConfig cfg_;
    std::vector<ParamGroup> groups_;
    Buffer<float> m_, v_;
    long step_ = 0;
};

// Scales grads so their global L2 norm is at most max_norm (like clip_grad_norm_: factor
// max_norm / (norm + 1e-6) when norm > max_norm; max_norm 0 disables). Returns the norm before.
float clip_grad_norm(float* grads, std::size_t n, float max_norm);

}  // namespace meshlm

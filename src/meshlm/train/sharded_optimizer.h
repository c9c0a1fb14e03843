// A Learner's optimizer over what this rank updates (its ZeRO chunk, or everything at stage 0,
// of its tensor-parallel shard): gradient clipping on the global norm, the step, and its state
// moving between this rank's part and the single-process layout files use (checkpoints).
#pragma once

#include <cstddef>
#include <memory>

#include "meshlm/core/buffer.h"
#include "meshlm/model/model_config.h"
#include "meshlm/optim/optimizer.h"
#include "meshlm/parallel/comm.h"
#include "meshlm/train/param_state.h"

namespace meshlm {

// This rank's part of a sharded checkpoint (learner.h Learner::local_chunk).
struct ChunkState {
    const float *params, *m, *v;  // count floats each
    std::size_t begin, count;
    const float* stats;
};

class ShardedOptimizer {
  public:
    // `layout` is this rank's layout, `full` the single-process one; all outlive it.
    ShardedOptimizer(const ModelConfig& model, const OptimConfig& optim, const ParamLayout& layout,
                     const ParamLayout& full, ParamState& state, Comm& dp, Comm& mp);
    ShardedOptimizer(const ShardedOptimizer&) = delete;
    ShardedOptimizer& operator=(const ShardedOptimizer&) = delete;

    Optimizer& optimizer() { return optim_; }
    const Optimizer& optimizer() const { return optim_; }
    // Clips the reduced gradients; returns the global norm before clipping. Norm clipping's
    // factor stays for step() where the optimizer folds it in (apply_clip).
    float clip();
    void step(const ParamState::Update& u, float lr) {
        optim_.step(u.params, u.grads, lr, grad_scale_);
    }
    // A new step drops local_chunk()'s copy of Adafactor's second moments.
    void begin_step() { v_export_ = Buffer<float>(); }

    std::unique_ptr<Optimizer> make_full() const;
    std::unique_ptr<Optimizer> gather();
    void load(Optimizer& full);
    ChunkState local_chunk();
    void load_local_chunk(const float* params, const float* m, const float* v, const float* stats,
                          long step);

  private:
    const ModelConfig& model_cfg_;
    const OptimConfig& optim_cfg_;
    const ParamLayout &layout_, &full_layout_;
    ParamState& state_;
    Comm &dp_, &mp_;
    Optimizer optim_;
    float grad_scale_ = 1.f;  // this step's clipping factor, not yet applied
    Buffer<float> v_export_;  // local_chunk(): Adafactor's second moments as the flat slot
};

}  // namespace meshlm

// The single-process training step: parameters, gradients and AdamW state as flat buffers with
// the model's layout, and one optimizer step over gradient-accumulated micro-batches.
// Everything is allocated in the constructor; train_step() allocates nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "meshlm/core/buffer.h"
#include "meshlm/model/gpt2.h"
#include "meshlm/optim/adamw.h"

namespace meshlm {

struct StepStats {
    float loss;  // mean over the micro-batches
    float lr;
    float grad_norm;  // global norm before clipping
};

class Learner {
  public:
    // Plans for micro-batches of (batch, seq) and a schedule of total_steps optimizer steps.
    Learner(const ModelConfig& model, const OptimConfig& optim, int batch, int seq,
            long total_steps);

    GPT2& model() { return model_; }
    const ParamLayout& layout() const { return model_.layout(); }
    float* params() { return params_.data(); }
    float* grads() { return grads_.data(); }
    AdamW& optimizer() { return optim_; }
    long step() const { return optim_.steps_taken(); }

    void init_params(std::uint64_t seed);
    // One optimizer step over `micro` micro-batches of (B, T); tokens and targets hold
    // micro*B*T ids each. The loss is the mean over every target >= 0 of all micro-batches
    // (padding is masked with -1). B*T may not exceed the planned batch*seq.
    StepStats train_step(const std::int32_t* tokens, const std::int32_t* targets, int micro, int B,
                         int T);
    StepStats train_step(const std::int32_t* tokens, const std::int32_t* targets, int micro) {
        return train_step(tokens, targets, micro, batch_, seq_);
    }
    // Mean loss of one batch without touching gradients.
    float eval_loss(const std::int32_t* tokens, const std::int32_t* targets);

    // Bytes allocated, by kind (for `info` and memory reports).
    std::size_t param_bytes() const { return params_.bytes(); }
    std::size_t grad_bytes() const { return grads_.bytes(); }
    std::size_t optimizer_bytes() const { return optim_.state_bytes(); }
    std::size_t activation_bytes() const { return model_.activation_bytes(); }

  private:
    ModelConfig model_cfg_;
    OptimConfig optim_cfg_;
    int batch_, seq_;
    long total_steps_;
    GPT2 model_;
    Buffer<float> params_, grads_;
    AdamW optim_;
};

// AdamW groups from the registry: decay on matrices, everything, or nothing (optim.decay_mask).
std::vector<ParamGroup> decay_groups(const ParamLayout& layout, const std::string& decay_mask);

}  // namespace meshlm

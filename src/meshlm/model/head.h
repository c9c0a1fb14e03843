// The output head and the loss: logits = s (x W^T (+ b)), W = wte when tied, s the fixed
// model.logit_scale (1 by default), then cross-entropy (with the optional z-loss term
// z * lse^2 in the gradient); the backward's dlogits carry the factor s back.
// Under tensor parallelism W is split by vocabulary rows (padded to a multiple of the model
// ranks): each rank computes its (N, Vl) columns, and cross-entropy all-reduces the row max,
// then the sums of exps and the target logits, so no rank holds (N, V); padding columns never
// enter the loss. Backward: dx = dlogits W (summed over the ranks), dW += dlogits^T x,
// db += sum_n dlogits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "meshlm/core/model_comm.h"
#include "meshlm/model/linear.h"
#include "meshlm/model/model_config.h"

namespace meshlm {

// logits[0..n) *= s (nothing when s is 1): model.logit_scale, shared with the decoders.
void scale_logits(Device d, float* logits, std::size_t n, float s);

struct Head {
    int C, V, v0, Vvalid, Vl;  // Vl: this rank's logits columns (padded share)
    float z_loss;
    float scale;  // model.logit_scale resolved
    ModelComm* mp;
    Bf16Scratch* bf16 = nullptr;  // the GEMMs in bf16 (linear.h); null: fp32
    Device device = Device::cpu;  // where the projection's views live

    Head(const ModelConfig& cfg, ModelComm& comm);
    // logits (N, Vl) for x (N, C).
    void logits(float* logits, const float* x, const float* W, const float* b, int N) const;
    // Per-token losses (0 where the target is < 0) from logits; when grad_scale != 0 the logits
    // become grad_scale * dL/dlogits in place. row_max (N) and stats (2N) are scratch for the
    // vocabulary-parallel path.
    void loss(float* logits, float* losses, float* row_max, float* stats,
              const std::int32_t* targets, int N, float grad_scale) const;
    // dx = this rank's dlogits W summed over the model ranks (overwrites), dW, db accumulate.
    void backward(float* dx, float* dW, float* db, const float* dlogits, const float* x,
                  const float* W, int N) const;
};

}  // namespace meshlm

// Causal self-attention over device-tagged views (kernels.h's attention_forward / _backward):
// grouped key/value heads, optional ALiBi, scores scale * q.k (scale 0 = 1/sqrt(D)). Memory is O(T)
// per query row on every device (online softmax); the forward saves each row's log-sum-exp for the
// backward, which recomputes the probabilities. Shapes (f32, one device):
//   qkv, dqkv [B, T, (H + 2 Hkv) D]  per row: H query heads, then Hkv key, then Hkv value heads
//   out, dout [B, T, H D];  lse [B, H, T];  alibi_slopes [H] (optional)
// The backward overwrites dqkv. H must be a multiple of Hkv; D <= 256.
#pragma once

#include "meshlm/core/tensor.h"
#include "meshlm/kernels/ops/op_params.h"

namespace meshlm::ops {

struct AttentionHeads {
    int H = 0, Hkv = 0;  // query heads, key/value heads
    float scale = 0.f;   // 0: 1/sqrt(D)
    // Dropout on the probabilities (model.dropout_attn; null or rate 0: none), the same mask on
    // every device.
    const kernels::AttnDropout* dropout = nullptr;
    // A learned bias by distance (model.position t5_bias; null: none), on the views' device.
    const kernels::DistanceBias* dist = nullptr;
};

void attention_forward(const Tensor& out, const Tensor& lse, const Tensor& qkv,
                       const Tensor& alibi_slopes, const AttentionHeads& heads);
void attention_backward(const Tensor& dqkv, const Tensor& dout, const Tensor& out,
                        const Tensor& lse, const Tensor& qkv, const Tensor& alibi_slopes,
                        const AttentionHeads& heads);

}  // namespace meshlm::ops

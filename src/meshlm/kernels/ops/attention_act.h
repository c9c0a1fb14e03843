// Causal attention with a nonlinearity other than softmax (model.attn_act) over device-tagged
// views (kernels.h's attention_act_forward / _backward): ops/attention.h's layout, GQA, ALiBi
// and scale, with p_ij = act(s_ij) / t_norm (sqrelu, elu) or act(s_ij) / (eps + sum_j act(s_ij))
// (norm_*) in place of softmax; no lse: the backward recomputes the scores.
// Shapes (f32, one device): qkv, dqkv [B, T, (H + 2 Hkv) D]; out, dout [B, T, H D];
// alibi_slopes [H] (optional). The backward overwrites dqkv. act.act != softmax; D <= 256.
#pragma once

#include "meshlm/core/tensor.h"
#include "meshlm/kernels/ops/attention.h"
#include "meshlm/kernels/ops/op_params.h"

namespace meshlm::ops {

void attention_act_forward(const Tensor& out, const Tensor& qkv, const Tensor& alibi_slopes,
                           const AttentionHeads& heads, const kernels::AttnActParams& act);
void attention_act_backward(const Tensor& dqkv, const Tensor& dout, const Tensor& qkv,
                            const Tensor& alibi_slopes, const AttentionHeads& heads,
                            const kernels::AttnActParams& act);

}  // namespace meshlm::ops

// Token (and learned position) embeddings over device-tagged views (kernels/vocab_parallel.h's
// lookup over the whole table, and the position rows):
//   forward:  out[n] = wte[tokens[n] - v0] (+ wpe[n % T] when wpe is present); a token outside
//             [v0, v0 + V) gives a zero row (+ its position row)
//   backward: dwte[tokens[n] - v0] += dout[n] for tokens in [v0, v0 + V);  dwpe[n % T] +=
//             dout[n] (when dwpe is present); each element summed in token order, so
//             deterministic on every device
//   position_embedding_*: the position half alone, out[n] += wpe[n % T] / dwpe[n % T] += dout[n];
//             with round_bf16 each wpe row is rounded to bf16 before it is added (a bf16 run)
//   sinusoid_position_forward: out[n] += s * table[p(n)] with s = scale[0] (rounded to bf16
//             when round_scale) and p(n) = pos0[n / T] + n % T (pos0 absent: n % T); table
//             [P, C] must hold every p(n) (checked on the host only when pos0 is absent)
//   sinusoid_position_backward: dscale[0] += sum_n dout[n] . table[p(n)] (in row order in
//             double on the CPU)
// Shapes: tokens i32 [N]; out, dout f32 [N, C]; wte, dwte f32 [V, C], the rows of tokens
// [v0, v0 + V) (v0 > 0: a vocabulary-parallel shard); wpe, dwpe f32 [P, C] with P >= T; scale,
// dscale f32 [1]; pos0 i32 [N / T].
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

void embedding_forward(const Tensor& out, const Tensor& tokens, const Tensor& wte,
                       const Tensor& wpe, int T, int v0 = 0);
void embedding_backward(const Tensor& dwte, const Tensor& dwpe, const Tensor& dout,
                        const Tensor& tokens, int T, int v0 = 0);
void position_embedding_forward(const Tensor& out, const Tensor& wpe, int T,
                                bool round_bf16 = false);
void position_embedding_backward(const Tensor& dwpe, const Tensor& dout, int T);
void sinusoid_position_forward(const Tensor& out, const Tensor& table, const Tensor& scale,
                               const Tensor& pos0, int T, bool round_scale);
void sinusoid_position_backward(const Tensor& dscale, const Tensor& dout, const Tensor& table,
                                const Tensor& pos0, int T);

}  // namespace meshlm::ops

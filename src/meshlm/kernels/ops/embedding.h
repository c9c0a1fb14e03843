// Token (and learned position) embeddings over device-tagged views (kernels/vocab_parallel.h's
// lookup over the whole table, and the position rows):
//   forward:  out[n] = wte[tokens[n]] (+ wpe[n % T] when wpe is present); a token outside
//             [0, V) gives a zero row (+ its position row)
//   backward: dwte[tokens[n]] += dout[n];  dwpe[n % T] += dout[n] (when dwpe is present);
//             each element summed in token order, so deterministic on every device
// Shapes: tokens i32 [N]; out, dout f32 [N, C]; wte, dwte f32 [V, C]; wpe, dwpe f32 [P, C] with
// P >= T.
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

void embedding_forward(const Tensor& out, const Tensor& tokens, const Tensor& wte,
                       const Tensor& wpe, int T);
void embedding_backward(const Tensor& dwte, const Tensor& dwpe, const Tensor& dout,
                        const Tensor& tokens, int T);

}  // namespace meshlm::ops

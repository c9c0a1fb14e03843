// Rotary position embedding over device-tagged views (kernels.h's rope_forward / _backward), in
// place on `heads` heads of width head_dim that start at column col0 of each row of x [N, W]
// (call it on the query heads and on the key heads of qkv rows). The first rope_dim dims of
// each head turn by pos * inv_freq[i] per pair i; the backward turns the gradient back.
// x f32 [N, W] (may have a row stride: a column block of wider rows), pos i32 [N] (absent: row n
// is at n % T), inv_freq f32 [rope_dim / 2].
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

struct RopeHeads {
    int col0 = 0;  // column of the first head's first dim
    int heads = 0, head_dim = 0, rope_dim = 0;
    bool interleaved = false;  // pairs (2i, 2i + 1) (GPT-J) or (i, i + rope_dim / 2) (NeoX)
    int T = 0;                 // sequence length, for positions n % T when pos is absent
};

void rope_forward(const Tensor& x, const Tensor& pos, const Tensor& inv_freq, const RopeHeads& r);
void rope_backward(const Tensor& dx, const Tensor& pos, const Tensor& inv_freq, const RopeHeads& r);

}  // namespace meshlm::ops

// Element-wise ops over device-tagged f32 views, for the small steps between the larger ops:
//   fill: x = value (any shape, dense)
//   mul:  out = a * b over 2-D views [N, C] of one shape; any of them may be a column block of
//         wider rows (Tensor::columns), e.g. one half of a gated layer's rows
//   axpy: y += alpha * x (one shape, dense)
// fill and mul are one IEEE operation per element, the same bits on every device; axpy may be
// fused into an FMA (as the compiler contracts it), 1 ulp apart at most.
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

void fill(const Tensor& x, float value);
void mul(const Tensor& out, const Tensor& a, const Tensor& b);
void axpy(const Tensor& y, const Tensor& x, float alpha);

}  // namespace meshlm::ops

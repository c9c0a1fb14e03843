// Linear layers for decoding over device-tagged views (kernels.h's linear_decode and
// linear_decode_bf16): y = x W^T + bias for few rows (one per sequence decoded together), each
// row's result independent of the others (bitwise) on every device.
// y f32 [M, O]; x f32 [M, I]; W [O, I] f32 or bf16 (its 16 bits); bias f32 [O] (optional).
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

void linear_decode(const Tensor& y, const Tensor& x, const Tensor& W, const Tensor& bias);

}  // namespace meshlm::ops

// The residual add over device-tagged views (kernels.h's residual_forward): out = a + b.
// out, a, b: f32 views of one shape on one device; out may be a or b (in place).
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

void residual_forward(const Tensor& out, const Tensor& a, const Tensor& b);

// The end of a residual branch (kernels.h's bias_residual), in place on out [N, C]:
//   out[n, c] = ((out[n, c] + b1[c]) + b2[c]) + r[n, c]
// b1, b2 f32 [C], each optional; r f32 [N, C]; one device.
void bias_residual(const Tensor& out, const Tensor& b1, const Tensor& b2, const Tensor& r);

}  // namespace meshlm::ops

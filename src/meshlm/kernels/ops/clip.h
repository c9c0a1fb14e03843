// The gradient norm and clipping over device-tagged views (kernels.h's sum_squares, scale,
// clamp). x: an f32 view of any shape (a flat gradient buffer or one tensor).
//   sum_squares: sum of x^2, returned to the host as a double (a CUDA x waits for the device);
//                deterministic: the same x gives the same bits on every call
//   scale:       x *= s
//   clamp:       x = min(max(x, -limit), limit) (element-wise clipping; a NaN stays NaN)
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

double sum_squares(const Tensor& x);
void scale(const Tensor& x, float s);
void clamp(const Tensor& x, float limit);

}  // namespace meshlm::ops

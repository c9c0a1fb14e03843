// RMSNorm over device-tagged views (kernels.h's rmsnorm_forward / _backward):
//   forward:  out = x * rstd * w (+ b) per row, rstd = 1 / sqrt(mean(x^2) + eps); saves rstd
//   backward: dx += ..., dw += ..., db += ... (accumulates)
// Shapes: x, out, dout, dx [N, C]; w, b, dw, db [C]; rstd [N]; all f32 on one device. b and db
// are optional (Tensor{}).
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

void rmsnorm_forward(const Tensor& out, const Tensor& rstd, const Tensor& x, const Tensor& w,
                     const Tensor& b, float eps);
void rmsnorm_backward(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& dout,
                      const Tensor& x, const Tensor& w, const Tensor& rstd);

}  // namespace meshlm::ops

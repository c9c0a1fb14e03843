// LayerNorm over device-tagged views (kernels.h's layernorm_forward / _backward):
//   forward:  out = (x - mean) * rstd * w + b per row; saves mean, rstd
//   backward: dx += ..., dw += ..., db += ... (accumulates)
// Shapes: x, out, dout, dx [N, C]; w, b, dw, db [C]; mean, rstd [N]; all f32 on one device.
// b and db are optional (Tensor{}).
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

void layernorm_forward(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                       const Tensor& w, const Tensor& b, float eps);
void layernorm_backward(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& dout,
                        const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd);

}  // namespace meshlm::ops

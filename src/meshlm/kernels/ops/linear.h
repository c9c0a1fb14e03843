// The linear layer's kernels over device-tagged views (kernels.h's linear_forward / _backward and
// add_bias), all f32 on one device, weights [O, I] like nn.Linear:
//   linear_forward:  y [N, O] = x [N, I] W^T + b           (b optional)
//   linear_backward: dx [N, I] = dy W (overwrites; optional), dW [O, I] += dy^T x,
//                    db [O] += sum_n dy (optional)
//   add_bias:        y [N, O] += b per row                  (a bias after an accumulating GEMM)
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

void linear_forward(const Tensor& y, const Tensor& x, const Tensor& W, const Tensor& b);
void linear_backward(const Tensor& dx, const Tensor& dW, const Tensor& db, const Tensor& dy,
                     const Tensor& x, const Tensor& W);
void add_bias(const Tensor& y, const Tensor& b);

}  // namespace meshlm::ops

// RMSNorm without gains over each query / key head (model.qk_norm), in place, over
// device-tagged views (kernels.h's qk_norm_forward / _backward):
//   forward:  rstd = 1 / sqrt(mean_d(x^2) + eps) per (row, head); x <- xhat = x rstd
//   backward: dx <- rstd (dx - xhat mean_d(dx xhat)), from the saved xhat and rstd
// `heads` heads of width head_dim start at column col0 of each row of x, dx [N, W] and xhat
// [N, Wx] (e.g. the q and k heads of qkv rows); rstd [N, heads] (optional in the forward).
// All f32 on one device.
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

struct QkNormHeads {
    int col0 = 0;  // column of the first head's first dim
    int heads = 0, head_dim = 0;
};

void qk_norm_forward(const Tensor& x, const Tensor& rstd, const QkNormHeads& h, float eps);
void qk_norm_backward(const Tensor& dx, const Tensor& xhat, const Tensor& rstd,
                      const QkNormHeads& h);

}  // namespace meshlm::ops

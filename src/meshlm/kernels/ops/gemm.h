// GEMM over device-tagged views: C = alpha op(A) op(B) + beta C, row-major, op(X) = X or X^T.
// Dispatches to kernels::gemm / gemm_bf16 (oneDNN) on the CPU and to cuBLASLt on CUDA.
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

// A, B: 2-D, both f32 or both bf16 (fp32 products and sums); op(A) [M, K], op(B) [K, N].
// C: f32 [M, N], read when beta != 0. All on one device. Any of them may have a row stride (a
// column block of wider rows, Tensor::columns): it is the GEMM's lda / ldb / ldc.
void gemm(const Tensor& C, const Tensor& A, bool trans_a, const Tensor& B, bool trans_b,
          float alpha = 1.f, float beta = 0.f);

}  // namespace meshlm::ops

// gemm's checks and device dispatch (ops/gemm.h).
#include "meshlm/kernels/ops/gemm.h"

#include <cstdint>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/check.h"
#include "meshlm/kernels/ops/dispatch.h"

namespace meshlm::ops {

void gemm(const Tensor& C, const Tensor& A, bool trans_a, const Tensor& B, bool trans_b,
          float alpha, float beta) {
    constexpr const char* op = "gemm";
    const Device d = common_device(op, {{"C", C}, {"A", A}, {"B", B}}, {}, Strides::allowed);
    const Shape& sa = expect_ndim(op, {"A", A}, 2);
    const Shape& sb = expect_ndim(op, {"B", B}, 2);
    if (A.dtype != DType::f32 && A.dtype != DType::bf16)
        throw Error(detail::concat(op, ": A is ", dtype_name(A.dtype), ", expected f32 or bf16"));
    expect_dtype(op, {"B", B}, A.dtype);
    expect_dtype(op, {"C", C}, DType::f32);
    const std::int64_t M = trans_a ? sa[1] : sa[0], K = trans_a ? sa[0] : sa[1];
    const std::int64_t Kb = trans_b ? sb[1] : sb[0], N = trans_b ? sb[0] : sb[1];
    if (K != Kb)
        throw Error(detail::concat(op, ": op(A) is [", M, ", ", K, "] but op(B) is [", Kb, ", ", N,
                                   "] (the inner dimensions differ)"));
    expect_shape(op, {"C", C}, Shape{M, N});
    kernels::require_device(d, op);
    const int m = as_int(op, "M", M), n = as_int(op, "N", N), k = as_int(op, "K", K);
    const int lda = as_int(op, "lda", row_stride(op, {"A", A}));
    const int ldb = as_int(op, "ldb", row_stride(op, {"B", B}));
    const int ldc = as_int(op, "ldc", row_stride(op, {"C", C}));
    float* c = static_cast<float*>(C.data);
    if (A.dtype == DType::bf16) {
        const auto* a = static_cast<const std::uint16_t*>(A.data);
        const auto* b = static_cast<const std::uint16_t*>(B.data);
        if (d == Device::cpu)
            return kernels::gemm_bf16(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
                                      ldc);
        MESHLM_ON_CUDA(op, kernels::cuda::gemm_bf16(trans_a, trans_b, m, n, k, alpha, a, lda, b,
                                                    ldb, beta, c, ldc));
        return;
    }
    const auto* a = static_cast<const float*>(A.data);
    const auto* b = static_cast<const float*>(B.data);
    if (d == Device::cpu)
        return kernels::gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    MESHLM_ON_CUDA(
        op, kernels::cuda::gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
}

}  // namespace meshlm::ops

// cuBLASLt as its documentation defines it, naively: D = alpha op(A) op(B) + beta C over
// column-major layouts (element (r, c) at r + c * ld), fp32 or bf16 operands, sums in double.
// It checks every shape and layout cuda/gemm.cpp passes, so the row-major -> column-major
// mapping is exercised without a GPU.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "cuda_runtime.h"

enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0 };
enum cublasComputeType_t { CUBLAS_COMPUTE_32F };
enum cudaDataType_t { CUDA_R_32F, CUDA_R_16BF };
enum cublasOperation_t { CUBLAS_OP_N, CUBLAS_OP_T };
enum cublasLtMatmulDescAttributes_t { CUBLASLT_MATMUL_DESC_TRANSA, CUBLASLT_MATMUL_DESC_TRANSB };
enum cublasLtMatmulPreferenceAttributes_t {
    CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES
};

struct EmuDesc {
    cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
};
struct EmuLayout {
    cudaDataType_t type;
    std::uint64_t rows, cols;
    std::int64_t ld;
};
using cublasLtHandle_t = void*;
using cublasLtMatmulDesc_t = EmuDesc*;
using cublasLtMatrixLayout_t = EmuLayout*;
using cublasLtMatmulPreference_t = int*;
struct cublasLtMatmulAlgo_t {
    int id;
};
struct cublasLtMatmulHeuristicResult_t {
    cublasLtMatmulAlgo_t algo;
};

inline void emu_require(bool ok) {
    if (!ok) std::abort();
}

inline cublasStatus_t cublasLtCreate(cublasLtHandle_t* h) {
    *h = reinterpret_cast<void*>(1);
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t,
                                               cudaDataType_t) {
    *d = new EmuDesc;
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                                     cublasLtMatmulDescAttributes_t a,
                                                     const void* v, std::size_t) {
    (a == CUBLASLT_MATMUL_DESC_TRANSA ? d->ta : d->tb) = *static_cast<const cublasOperation_t*>(v);
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
    delete d;
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType_t t,
                                                 std::uint64_t rows, std::uint64_t cols,
                                                 std::int64_t ld) {
    emu_require(ld >= static_cast<std::int64_t>(rows));  // column-major: ld >= rows
    *l = new EmuLayout{t, rows, cols, ld};
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
    delete l;
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p) {
    *p = new int;
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t,
                                                           cublasLtMatmulPreferenceAttributes_t a,
                                                           const void* v, std::size_t) {
    if (a != CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) {
        const std::uint32_t al = *static_cast<const std::uint32_t*>(v);
        emu_require(al != 0 && (al & (al - 1)) == 0);  // a power of two
    }
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
    delete p;
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t,
                                                     cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                                     cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                                     cublasLtMatmulPreference_t, int,
                                                     cublasLtMatmulHeuristicResult_t* result,
                                                     int* found) {
    result->algo.id = 1;
    *found = 1;
    return CUBLAS_STATUS_SUCCESS;
}

inline float emu_at(const void* p, const EmuLayout* l, std::uint64_t r, std::uint64_t c) {
    emu_require(r < l->rows && c < l->cols);
    const std::size_t at = r + c * l->ld;
    if (l->type == CUDA_R_32F) return static_cast<const float*>(p)[at];
    const std::uint32_t bits = std::uint32_t{static_cast<const std::uint16_t*>(p)[at]} << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

inline cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t d, const void* alpha,
                                     const void* A, cublasLtMatrixLayout_t la, const void* B,
                                     cublasLtMatrixLayout_t lb, const void* beta, const void* C,
                                     cublasLtMatrixLayout_t lc, void* D, cublasLtMatrixLayout_t ld,
                                     const cublasLtMatmulAlgo_t*, void*, std::size_t, int) {
    const std::uint64_t m = lc->rows, n = lc->cols;
    const std::uint64_t k = d->ta == CUBLAS_OP_N ? la->cols : la->rows;
    emu_require((d->ta == CUBLAS_OP_N ? la->rows : la->cols) == m);
    emu_require((d->tb == CUBLAS_OP_N ? lb->rows : lb->cols) == k);
    emu_require((d->tb == CUBLAS_OP_N ? lb->cols : lb->rows) == n);
    const float a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta);
    for (std::uint64_t i = 0; i < m; ++i)
        for (std::uint64_t j = 0; j < n; ++j) {
            double s = 0;
            for (std::uint64_t p = 0; p < k; ++p)
                s += double(d->ta == CUBLAS_OP_N ? emu_at(A, la, i, p) : emu_at(A, la, p, i)) *
                     (d->tb == CUBLAS_OP_N ? emu_at(B, lb, p, j) : emu_at(B, lb, j, p));
            const float c = b != 0.f ? b * emu_at(C, lc, i, j) : 0.f;
            static_cast<float*>(D)[i + j * ld->ld] = static_cast<float>(a * s + c);
        }
    return CUBLAS_STATUS_SUCCESS;
}

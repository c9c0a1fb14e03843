// GEMMs on the GPU with cuBLASLt: fp32 (CUBLAS_COMPUTE_32F, no TF32, so results are fp32 sums
// like the CPU's) and bf16 operands with fp32 accumulation and an fp32 C.
//
// Row-major C[M,N] = op(A) op(B) is column-major C^T[N,M] = op(B)^T op(A)^T, so cuBLASLt's "A"
// is our B and its "B" our A, each described as stored (a row-major [r, c] matrix with row
// stride ld is a column-major [c, r] one with leading dimension ld).
//
// One cuBLASLt handle and a 32 MiB workspace per process (one process per GPU), made at the
// first GEMM on the device current then. Descriptors and the algorithm are chosen per call
// (cuBLASLt's heuristic, told the pointers' real alignment); caching them per shape is left
// for when a GPU can measure what it saves.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "meshlm/core/error.h"
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"

namespace meshlm::kernels::cuda {

namespace {

constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

struct LtContext {
    cublasLtHandle_t handle = nullptr;
    void* workspace = nullptr;
    int device = -1;
};

LtContext& lt_context() {
    static LtContext c = [] {
        LtContext r;
        MESHLM_CUDA_CHECK(cudaGetDevice(&r.device));
        MESHLM_CUBLAS_CHECK(cublasLtCreate(&r.handle));
        MESHLM_CUDA_CHECK(cudaMalloc(&r.workspace, kWorkspaceBytes));
        return r;
    }();
    int device = -1;
    MESHLM_CUDA_CHECK(cudaGetDevice(&device));
    MESHLM_CHECK(device == c.device, "cuBLASLt context made on CUDA device ", c.device,
                 ", used on ", device, " (meshlm runs one process per GPU)");
    return c;
}

// The largest power of two up to 256 that divides the address.
std::uint32_t alignment(const void* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    std::uint32_t al = 256;
    while (al > 1 && a % al != 0) al /= 2;
    return al;
}

// Destroys the descriptors of one call, whatever throws.
struct Descriptors {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    ~Descriptors() {
        if (pref) cublasLtMatmulPreferenceDestroy(pref);
        if (c) cublasLtMatrixLayoutDestroy(c);
        if (b) cublasLtMatrixLayoutDestroy(b);
        if (a) cublasLtMatrixLayoutDestroy(a);
        if (op) cublasLtMatmulDescDestroy(op);
    }
};

void set_alignment(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
                   const void* p) {
    const std::uint32_t al = alignment(p);
    MESHLM_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &al, sizeof(al)));
}

void matmul(cudaDataType_t ab_type, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
            const void* A, int lda, const void* B, int ldb, float beta, float* C, int ldc) {
    if (M == 0 || N == 0) return;
    MESHLM_CHECK(K > 0, "cuda gemm: K = ", K, " (an empty inner dimension)");
    LtContext& ctx = lt_context();
    Descriptors d;
    MESHLM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&d.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t op_a = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;  // on our B
    const cublasOperation_t op_b = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;  // on our A
    MESHLM_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
    MESHLM_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
    // As stored, column-major: our B is [K, N] row-major (or [N, K] when transposed).
    MESHLM_CUBLAS_CHECK(
        cublasLtMatrixLayoutCreate(&d.a, ab_type, trans_b ? K : N, trans_b ? N : K, ldb));
    MESHLM_CUBLAS_CHECK(
        cublasLtMatrixLayoutCreate(&d.b, ab_type, trans_a ? M : K, trans_a ? K : M, lda));
    MESHLM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.c, CUDA_R_32F, N, M, ldc));

    MESHLM_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&d.pref));
    const std::size_t ws = kWorkspaceBytes;
    MESHLM_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    set_alignment(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, B);
    set_alignment(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, A);
    set_alignment(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, C);
    set_alignment(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, C);

    cublasLtMatmulHeuristicResult_t best{};
    int found = 0;
    MESHLM_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(ctx.handle, d.op, d.a, d.b, d.c, d.c, d.pref,
                                                       1, &best, &found));
    MESHLM_CHECK(found > 0, "cuBLASLt has no algorithm for M ", M, " N ", N, " K ", K,
                 (ab_type == CUDA_R_16BF ? " (bf16)" : " (fp32)"));
    MESHLM_CUBLAS_CHECK(cublasLtMatmul(ctx.handle, d.op, &alpha, B, d.a, A, d.b, &beta, C, d.c, C,
                                       d.c, &best.algo, ctx.workspace, ws, /*stream=*/0));
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc) {
    matmul(CUDA_R_32F, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_bf16(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const std::uint16_t* A,
               int lda, const std::uint16_t* B, int ldb, float beta, float* C, int ldc) {
    matmul(CUDA_R_16BF, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace meshlm::kernels::cuda

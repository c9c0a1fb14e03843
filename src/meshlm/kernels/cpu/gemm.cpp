// GEMM through oneDNN's dnnl_sgemm (row-major). Picked after measuring OpenBLAS, BLIS and
// oneDNN on the GPT-2 training shapes (bench/gemm_libs.sh): oneDNN was fastest and steadiest.
// It runs on our OpenMP pool, single-threaded when called inside a parallel region.
#include <dnnl.h>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {
namespace {
thread_local int g_gemm_depth = 0;
}

bool in_gemm() {
    return g_gemm_depth > 0;
}

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc) {
    if (lda == 0) lda = trans_a ? M : K;
    if (ldb == 0) ldb = trans_b ? K : N;
    if (ldc == 0) ldc = N;
    ++g_gemm_depth;
    dnnl_status_t st = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, A, lda,
                                  B, ldb, beta, C, ldc);
    --g_gemm_depth;
    MESHLM_CHECK(st == dnnl_success, "dnnl_sgemm failed with status ", static_cast<int>(st),
                 " for M=", M, " N=", N, " K=", K);
}

}  // namespace meshlm::kernels

// GEMM through OpenBLAS (picked after measuring OpenBLAS, BLIS and oneDNN: bench/gemm_libs.sh).
#include <cblas.h>

#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc) {
    if (lda == 0) lda = trans_a ? M : K;
    if (ldb == 0) ldb = trans_b ? K : N;
    if (ldc == 0) ldc = N;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace meshlm::kernels

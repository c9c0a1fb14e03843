// Diagnostics of attention for the coordinate check (not on the training path): the scores of
// every (query, key) pair, 64 query rows at a time through the GEMM.
#include <cmath>
#include <vector>

#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {

double attention_score_abs_sum(const float* qkv, int B, int T, int H, int Hkv, int D, float scale) {
    const int G = H / Hkv, ld = (H + 2 * Hkv) * D;
    constexpr int kRows = 64;
    double total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static)
    for (int bh = 0; bh < B * H; ++bh) {
        const int b = bh / H, h = bh % H;
        const float* Q = qkv + static_cast<std::size_t>(b) * T * ld + h * D;
        const float* K = qkv + static_cast<std::size_t>(b) * T * ld + (H + h / G) * D;
        std::vector<float> S(static_cast<std::size_t>(kRows) * T);
        for (int i0 = 0; i0 < T; i0 += kRows) {
            const int n = T - i0 < kRows ? T - i0 : kRows;
            gemm(false, true, n, T, D, scale, Q + static_cast<std::size_t>(i0) * ld, ld, K, ld, 0.f,
                 S.data(), T);
            double s = 0;
            for (std::size_t k = 0; k < static_cast<std::size_t>(n) * T; ++k) s += std::fabs(S[k]);
            total += s;
        }
    }
    return total;
}

}  // namespace meshlm::kernels

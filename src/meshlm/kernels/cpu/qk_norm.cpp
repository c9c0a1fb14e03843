// RMSNorm without gains over each head of q and k (model.qk_norm), in place on rows of qkv.
//   forward:  rstd = 1/sqrt(mean_d(x^2) + eps) per (row, head); x <- xhat = x * rstd
//   backward: dx = rstd * (dxhat - xhat * mean_d(dxhat * xhat)), in place on the gradient
// A rotation preserves a head's norm, so the norm commutes with RoPE: the model normalizes after
// rotating and the backward reads the saved (rotated, normalized) heads as xhat.
#include <cmath>

#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {

void qk_norm_forward(float* x, int ld, float* rstd, int N, int heads, int D, float eps) {
#pragma omp parallel for schedule(static) if (static_cast <long>(N) * heads * D >= (1 << 15))
    for (int n = 0; n < N; ++n)
        for (int h = 0; h < heads; ++h) {
            float* xr = x + static_cast<std::size_t>(n) * ld + static_cast<std::size_t>(h) * D;
            float ss = 0.f;
#pragma omp simd reduction(+ : ss)
            for (int d = 0; d < D; ++d) ss += xr[d] * xr[d];
            const float r = 1.f / std::sqrt(ss / D + eps);
#pragma omp simd
            for (int d = 0; d < D; ++d) xr[d] *= r;
            if (rstd) rstd[static_cast<std::size_t>(n) * heads + h] = r;
        }
}

void qk_norm_backward(float* dx, int ld, const float* xhat, int ldx, const float* rstd, int N,
                      int heads, int D) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n)
        for (int h = 0; h < heads; ++h) {
            float* g = dx + static_cast<std::size_t>(n) * ld + static_cast<std::size_t>(h) * D;
            const float* y =
                xhat + static_cast<std::size_t>(n) * ldx + static_cast<std::size_t>(h) * D;
            float dot = 0.f;
#pragma omp simd reduction(+ : dot)
            for (int d = 0; d < D; ++d) dot += g[d] * y[d];
            const float m = dot / D, r = rstd[static_cast<std::size_t>(n) * heads + h];
#pragma omp simd
            for (int d = 0; d < D; ++d) g[d] = r * (g[d] - y[d] * m);
        }
}

}  // namespace meshlm::kernels

// RMSNorm over the last dimension C.
//   forward:  rstd = 1/sqrt(mean_c(x^2) + eps), xhat = x * rstd; y = xhat*w (+ b when b is
//             non-null). Saves rstd per row for the backward.
//   backward: dxhat = dy * w
//             dx  += rstd * (dxhat - xhat * mean_c(dxhat * xhat))
//             dw  += sum_n dy * xhat,  db += sum_n dy (skipped when db is null)
// (LayerNorm's backward without the mean terms: no mean is subtracted.)
// dx is parallel over rows; dw/db over channel slices (one thread per element, row order).
#include <omp.h>

#include <cmath>

#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {

namespace {
constexpr long kSerialBelow = 1 << 15;  // elements
}

void rmsnorm_forward(float* out, float* rstd, const float* x, const float* w, const float* b, int N,
                     int C, float eps) {
    // A few rows (decoding) cost less than waking the other threads; the result is the same.
#pragma omp parallel for schedule(static) if (static_cast <long>(N) * C >= kSerialBelow)
    for (int n = 0; n < N; ++n) {
        const float* xr = x + static_cast<std::size_t>(n) * C;
        float* yr = out + static_cast<std::size_t>(n) * C;
        float ss = 0.f;
#pragma omp simd reduction(+ : ss)
        for (int c = 0; c < C; ++c) ss += xr[c] * xr[c];
        const float r = 1.f / std::sqrt(ss / C + eps);
        if (b) {
#pragma omp simd
            for (int c = 0; c < C; ++c) yr[c] = xr[c] * r * w[c] + b[c];
        } else {
#pragma omp simd
            for (int c = 0; c < C; ++c) yr[c] = xr[c] * r * w[c];
        }
        rstd[n] = r;
    }
}

void rmsnorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                      const float* w, const float* rstd, int N, int C) {
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int n = 0; n < N; ++n) {
            const float* xr = x + static_cast<std::size_t>(n) * C;
            const float* g = dout + static_cast<std::size_t>(n) * C;
            float* dxr = dx + static_cast<std::size_t>(n) * C;
            const float r = rstd[n];
            float sum_dxhat_xhat = 0.f;
#pragma omp simd reduction(+ : sum_dxhat_xhat)
            for (int c = 0; c < C; ++c) sum_dxhat_xhat += g[c] * w[c] * xr[c] * r;
            const float a = sum_dxhat_xhat / C;
#pragma omp simd
            for (int c = 0; c < C; ++c) dxr[c] += r * (g[c] * w[c] - xr[c] * r * a);
        }
        const int nt = omp_get_num_threads(), t = omp_get_thread_num();
        const int c0 = static_cast<int>(static_cast<long>(C) * t / nt);
        const int c1 = static_cast<int>(static_cast<long>(C) * (t + 1) / nt);
        for (int n = 0; n < N; ++n) {
            const float* xr = x + static_cast<std::size_t>(n) * C;
            const float* g = dout + static_cast<std::size_t>(n) * C;
            const float r = rstd[n];
#pragma omp simd
            for (int c = c0; c < c1; ++c) dw[c] += g[c] * xr[c] * r;
            if (db) {
#pragma omp simd
                for (int c = c0; c < c1; ++c) db[c] += g[c];
            }
        }
    }
}

}  // namespace meshlm::kernels

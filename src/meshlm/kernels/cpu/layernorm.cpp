// LayerNorm over the last dimension C.
//   forward:  xhat = (x - mean) * rstd, rstd = 1/sqrt(var + eps) (biased var); y = xhat*w + b
//             (no b term when b is null). Saves mean and rstd per row for the backward.
//   backward: dxhat = dy * w
//             dx  += rstd * (dxhat - mean_c(dxhat) - xhat * mean_c(dxhat * xhat))
//             dw  += sum_n dy * xhat,  db += sum_n dy (skipped when db is null)
// dx is parallel over rows; dw/db over channel slices (one thread per element, row order).
#include <omp.h>

#include <cmath>

#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {

namespace {
constexpr long kSerialBelow = 1 << 15;  // elements
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, int N, int C, float eps) {
    // A few rows (decoding) cost less than waking the other threads; the result is the same.
#pragma omp parallel for schedule(static) if (static_cast <long>(N) * C >= kSerialBelow)
    for (int n = 0; n < N; ++n) {
        const float* xr = x + static_cast<std::size_t>(n) * C;
        float* yr = out + static_cast<std::size_t>(n) * C;
        float s = 0.f;
#pragma omp simd reduction(+ : s)
        for (int c = 0; c < C; ++c) s += xr[c];
        float m = s / C;
        float v = 0.f;
#pragma omp simd reduction(+ : v)
        for (int c = 0; c < C; ++c) v += (xr[c] - m) * (xr[c] - m);
        float r = 1.f / std::sqrt(v / C + eps);
        if (b) {
#pragma omp simd
            for (int c = 0; c < C; ++c) yr[c] = (xr[c] - m) * r * w[c] + b[c];
        } else {
#pragma omp simd
            for (int c = 0; c < C; ++c) yr[c] = (xr[c] - m) * r * w[c];
        }
        mean[n] = m;
        rstd[n] = r;
    }
}

void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                        const float* w, const float* mean, const float* rstd, int N, int C) {
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int n = 0; n < N; ++n) {
            const float* xr = x + static_cast<std::size_t>(n) * C;
            const float* g = dout + static_cast<std::size_t>(n) * C;
            float* dxr = dx + static_cast<std::size_t>(n) * C;
            float m = mean[n], r = rstd[n];
            float sum_dxhat = 0.f, sum_dxhat_xhat = 0.f;
#pragma omp simd reduction(+ : sum_dxhat, sum_dxhat_xhat)
            for (int c = 0; c < C; ++c) {
                float dxhat = g[c] * w[c];
                sum_dxhat += dxhat;
                sum_dxhat_xhat += dxhat * (xr[c] - m) * r;
            }
            float a = sum_dxhat / C, bb = sum_dxhat_xhat / C;
#pragma omp simd
            for (int c = 0; c < C; ++c) {
                float xhat = (xr[c] - m) * r;
                dxr[c] += r * (g[c] * w[c] - a - xhat * bb);
            }
        }
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        int c0 = static_cast<int>(static_cast<long>(C) * t / nt);
        int c1 = static_cast<int>(static_cast<long>(C) * (t + 1) / nt);
        for (int n = 0; n < N; ++n) {
            const float* xr = x + static_cast<std::size_t>(n) * C;
            const float* g = dout + static_cast<std::size_t>(n) * C;
            float m = mean[n], r = rstd[n];
#pragma omp simd
            for (int c = c0; c < c1; ++c) dw[c] += g[c] * (xr[c] - m) * r;
            if (db) {
#pragma omp simd
                for (int c = c0; c < c1; ++c) db[c] += g[c];
            }
        }
    }
}

}  // namespace meshlm::kernels

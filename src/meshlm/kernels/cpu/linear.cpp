// Linear layer, weights [O, I] like nn.Linear.
//   forward:  y = x W^T + b
//   backward: dx = dy W,  dW += dy^T x,  db += sum_n dy
//   add_bias: y += b per row
#include <omp.h>

#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {

void linear_forward(float* y, const float* x, const float* W, const float* bias, int N, int I,
                    int O) {
    if (bias) {
#pragma omp parallel for schedule(static)
        for (int n = 0; n < N; ++n) {
            float* yr = y + static_cast<std::size_t>(n) * O;
#pragma omp simd
            for (int o = 0; o < O; ++o) yr[o] = bias[o];
        }
    }
    gemm(false, true, N, O, I, 1.f, x, I, W, I, bias ? 1.f : 0.f, y, O);
}

void linear_backward(float* dx, float* dW, float* dbias, const float* dy, const float* x,
                     const float* W, int N, int I, int O) {
    if (dx) gemm(false, false, N, I, O, 1.f, dy, O, W, I, 0.f, dx, I);
    gemm(true, false, O, I, N, 1.f, dy, O, x, I, 1.f, dW, I);
    if (dbias) bias_backward(dbias, dy, N, O);
}

void bias_backward(float* db, const float* dy, int N, int O) {
    // Each thread owns a range of columns and sums the rows in order: deterministic.
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        int o0 = static_cast<int>(static_cast<long>(O) * t / nt);
        int o1 = static_cast<int>(static_cast<long>(O) * (t + 1) / nt);
        for (int n = 0; n < N; ++n) {
            const float* g = dy + static_cast<std::size_t>(n) * O;
#pragma omp simd
            for (int o = o0; o < o1; ++o) db[o] += g[o];
        }
    }
}

void add_bias(float* y, const float* b, int N, int O) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n)
        for (int o = 0; o < O; ++o) y[static_cast<long>(n) * O + o] += b[o];
}

}  // namespace meshlm::kernels

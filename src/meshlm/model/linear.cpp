#include "meshlm/model/linear.h"

#include <omp.h>

#include <cstddef>

#include "meshlm/kernels/kernels.h"

namespace meshlm::linear {

void forward(float* y, const float* x, const float* W, const float* b, int N, int I, int O,
             bool accumulate) {
    if (!accumulate) return kernels::linear_forward(y, x, W, b, N, I, O);
    kernels::gemm(false, true, N, O, I, 1.f, x, I, W, I, 1.f, y, O);
    if (b)
#pragma omp parallel for schedule(static)
        for (int n = 0; n < N; ++n)
            for (int o = 0; o < O; ++o) y[static_cast<long>(n) * O + o] += b[o];
}

void backward(float* dx, float* dW, float* db, const float* dy, const float* x, const float* W,
              int N, int I, int O, bool accumulate) {
    if (!accumulate) return kernels::linear_backward(dx, dW, db, dy, x, W, N, I, O);
    kernels::linear_backward(nullptr, dW, db, dy, x, W, N, I, O);
    kernels::gemm(false, false, N, I, O, 1.f, dy, O, W, I, 1.f, dx, I);
}

}  // namespace meshlm::linear

namespace meshlm::linear {

void bias_backward(float* db, const float* dy, int N, int O) {
    // Each thread owns a range of columns and sums the rows in order: deterministic.
#pragma omp parallel
    {
        const int nt = omp_get_num_threads(), t = omp_get_thread_num();
        const int o0 = static_cast<int>(static_cast<long>(O) * t / nt);
        const int o1 = static_cast<int>(static_cast<long>(O) * (t + 1) / nt);
        for (int n = 0; n < N; ++n) {
            const float* g = dy + static_cast<std::size_t>(n) * O;
#pragma omp simd
            for (int o = o0; o < o1; ++o) db[o] += g[o];
        }
    }
}

}  // namespace meshlm::linear

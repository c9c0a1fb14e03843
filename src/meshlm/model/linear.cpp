#include "meshlm/model/linear.h"

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

// Element-wise kernels (kernels.h's fill, mul_rows, axpy): one IEEE operation per element.
#include <cstddef>

#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {

void fill(float* x, float value, std::size_t n) {
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) x[i] = value;
}

void mul_rows(float* out, int ldo, const float* a, int lda, const float* b, int ldb, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) {
        float* o = out + static_cast<std::size_t>(n) * ldo;
        const float* x = a + static_cast<std::size_t>(n) * lda;
        const float* y = b + static_cast<std::size_t>(n) * ldb;
        for (int c = 0; c < C; ++c) o[c] = x[c] * y[c];
    }
}

void axpy(float* y, const float* x, float alpha, std::size_t n) {
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

}  // namespace meshlm::kernels

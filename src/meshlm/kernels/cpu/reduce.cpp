// Reductions and scaling over flat buffers. sum_squares splits the range into one static chunk
// per thread and adds the chunk sums in thread order, so the result depends only on the
// thread count.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {

double sum_squares(const float* x, std::size_t n) {
    constexpr int kMaxThreads = 256;
    double partial[kMaxThreads] = {};
    int used = 1;
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        if (t == 0) used = nt;
        if (nt <= kMaxThreads) {
            std::size_t i0 = n * t / nt, i1 = n * (t + 1) / nt;
            double acc = 0.0;
            // Blocks of float sums keep the inner loop vectorized; doubles across blocks.
            for (std::size_t b = i0; b < i1; b += 1024) {
                std::size_t e = b + 1024 < i1 ? b + 1024 : i1;
                float s = 0.f;
#pragma omp simd reduction(+ : s)
                for (std::size_t i = b; i < e; ++i) s += x[i] * x[i];
                acc += s;
            }
            partial[t] = acc;
        }
    }
    double total = 0.0;
    for (int t = 0; t < used; ++t) total += partial[t];
    return total;
}

void scale(float* x, float s, std::size_t n) {
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) x[i] *= s;
}

void clamp(float* x, float limit, std::size_t n) {
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) x[i] = std::min(std::max(x[i], -limit), limit);
}

double sum_f64(const float* x, std::size_t n) {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += x[i];
    return s;
}

double abs_sum_rows(const float* x, int rows, int width, int ld) {
    double s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
    for (int r = 0; r < rows; ++r) {
        const float* row = x + static_cast<std::size_t>(r) * ld;
        double t = 0;
        for (int c = 0; c < width; ++c) t += std::fabs(row[c]);
        s += t;
    }
    return s;
}

}  // namespace meshlm::kernels

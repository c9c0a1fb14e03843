// Positions added to the embeddings (kernels.h): a bf16 run's learned positions and the scaled
// sinusoids of model.position scaled_sin (Transformer-VQ's).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {

namespace {
std::size_t position_of(const std::int32_t* pos0, int n, int T) {
    return static_cast<std::size_t>((pos0 ? pos0[n / T] : 0) + n % T);
}
}  // namespace

void position_embedding_forward_bf16(float* out, const float* wpe, int N, int T, int C) {
#pragma omp parallel for schedule(static)
    for (int t = 0; t < T; ++t) {
        thread_local std::vector<float> row;
        row.resize(C);
        round_bf16(row.data(), wpe + static_cast<std::size_t>(t) * C, C);
        for (int n = t; n < N; n += T) {
            float* o = out + static_cast<std::size_t>(n) * C;
            for (int c = 0; c < C; ++c) o[c] += row[c];
        }
    }
}

void sinusoid_position_forward(float* out, const float* table, const float* scale,
                               const std::int32_t* pos0, int N, int T, int C, bool round_scale) {
    float s = *scale;
    if (round_scale) round_bf16(&s, &s, 1);
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) {
        const float* p = table + position_of(pos0, n, T) * C;
        float* o = out + static_cast<std::size_t>(n) * C;
        for (int c = 0; c < C; ++c) o[c] += s * p[c];
    }
}

void sinusoid_position_backward(float* dscale, const float* dout, const float* table,
                                const std::int32_t* pos0, int N, int T, int C) {
    double a = 0;
    for (int n = 0; n < N; ++n) {
        const float* p = table + position_of(pos0, n, T) * C;
        const float* g = dout + static_cast<std::size_t>(n) * C;
        for (int c = 0; c < C; ++c) a += static_cast<double>(g[c]) * p[c];
    }
    *dscale += static_cast<float>(a);
}

}  // namespace meshlm::kernels

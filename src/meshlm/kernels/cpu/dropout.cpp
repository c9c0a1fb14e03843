// Inverted dropout, in place: x[n, c] *= Z(n, c), Z = keep / (1 - rate) with keep drawn as draw
// (row0 + n) * C + c of the Philox stream (seed, stream) (cpu/dropout_mask.h). Z^2 = Z * Z
// and the same arguments give the same Z, so applying it to the output gradient is the
// backward. rate 0 returns before touching x: a bitwise no-op, and no draws are spent.
#include <cstdint>

#include "meshlm/core/error.h"
#include "meshlm/kernels/cpu/dropout_mask.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {

void dropout(float* x, int N, int C, float rate, std::uint64_t seed, std::uint64_t stream,
             std::int64_t row0) {
    if (rate == 0.f) return;
    MESHLM_CHECK(rate > 0.f && rate < 1.f, "dropout rate ", rate, " outside [0, 1)");
    MESHLM_CHECK(row0 >= 0, "dropout row0 ", row0, " < 0");
    constexpr int kChunk = 256;
#pragma omp parallel for schedule(static) if (static_cast <long>(N) * C >= 16384)
    for (int n = 0; n < N; ++n) {
        float* r = x + static_cast<std::size_t>(n) * C;
        const std::uint64_t first =
            static_cast<std::uint64_t>(row0 + n) * static_cast<std::uint64_t>(C);
        alignas(32) float z[kChunk];
        for (int c0 = 0; c0 < C; c0 += kChunk) {
            const int m = C - c0 < kChunk ? C - c0 : kChunk;
            cpu::dropout_scales(z, seed, stream, first + c0, m, rate);
#pragma omp simd
            for (int c = 0; c < m; ++c) r[c0 + c] *= z[c];
        }
    }
}

}  // namespace meshlm::kernels

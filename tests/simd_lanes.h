// Which summation order this build's compiler gives an `omp simd` float reduction. The CPU
// kernels' row reductions (layernorm, rmsnorm, qk_norm, sum_squares) are such loops, and
// -march=native picks their vector width: 4 lanes on Zen 1 (GCC tunes znver1 for 128-bit
// vectors), 8 on Zen 2 and 3, 16 where AVX-512 is enabled (GCC 12.2 knows no znver4 and uses the
// full width). The lanes sum in another order, so every training result follows this width.
// Included by golden_training_test and compiled alone by tools/reference/record_golden.sh with
// the kernels' flags.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace meshlm::test {

// The kernels' loop shape; not inlined, so the compiler cannot fold it into a constant.
__attribute__((noinline)) inline float omp_simd_sum(const float* x, int n) {
    float s = 0.f;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < n; ++i) s += x[i];
    return s;
}

// "N lanes" where the probe sums as N interleaved partial sums added in lane order at the end
// (how GCC 12 ends an `omp simd` reduction), else "unknown XXXXXXXX" (the probe's bits).
inline std::string simd_reduction_key() {
    constexpr int kN = 64;
    float x[kN];
    std::uint32_t state = 35;  // gives six different sums for 1 to 32 lanes
    for (float& v : x) {       // magnitudes 2^-6 .. 2^6: each grouping rounds differently
        state = state * 1664525u + 1013904223u;
        v = static_cast<float>(static_cast<int>(state >> 8) - (1 << 23)) / (1 << 23) *
            static_cast<float>(1 << (state % 13)) / 64.f;
    }
    volatile int n = kN;  // a run-time length, as the kernels have
    const float got = omp_simd_sum(x, n);
    for (int lanes = 1; lanes <= 32; lanes *= 2) {
        float acc[32] = {}, sum = 0.f;
        for (int i = 0; i < kN; ++i) acc[i % lanes] += x[i];
        for (int l = 0; l < lanes; ++l) sum += acc[l];
        if (std::memcmp(&sum, &got, sizeof got) == 0) return std::to_string(lanes) + " lanes";
    }
    std::uint32_t bits;
    std::memcpy(&bits, &got, sizeof bits);
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", bits);
    return std::string("unknown ") + hex;
}

}  // namespace meshlm::test

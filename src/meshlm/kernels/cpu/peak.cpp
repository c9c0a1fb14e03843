// Measures the machine's fp32 FMA peak: each thread runs independent FMA chains of the widest
// vectors this build targets (AVX-512 where the compiler may use it, else AVX2), enough of them
// to hide the FMA latency, for a fixed time.
#include <immintrin.h>
#include <omp.h>

#include <chrono>
#include <cstdint>
#include <cstring>

#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {
namespace {

#ifdef __AVX512F__
using Vec = __m512;
constexpr int kLanes = 16;
inline Vec vload(const float* p) {
    return _mm512_loadu_ps(p);
}
inline void vstore(float* p, Vec v) {
    _mm512_storeu_ps(p, v);
}
inline Vec vfma(Vec a, Vec b, Vec c) {
    return _mm512_fmadd_ps(a, b, c);
}
#else
using Vec = __m256;
constexpr int kLanes = 8;
inline Vec vload(const float* p) {
    return _mm256_loadu_ps(p);
}
inline void vstore(float* p, Vec v) {
    _mm256_storeu_ps(p, v);
}
inline Vec vfma(Vec a, Vec b, Vec c) {
    return _mm256_fmadd_ps(a, b, c);
}
#endif
constexpr int kChains = 12;

// The bf16 probe: kChains independent AVX512-BF16 dot-product chains (vdpbf16ps: per fp32 lane,
// two bf16 products added to the accumulator, 64 flops per instruction). Compiled for that ISA
// whatever the build targets; called only where the CPU has it.
__attribute__((target("avx512f,avx512bf16"), noinline)) void dpbf16_chains(float* state,
                                                                           long iters) {
    __m512 c[kChains];
    for (int i = 0; i < kChains; ++i) c[i] = _mm512_loadu_ps(state + 16 * i);
    const __m512bh a = (__m512bh)_mm512_loadu_si512(state + 16 * kChains);
    const __m512bh b = (__m512bh)_mm512_loadu_si512(state + 16 * (kChains + 1));
    for (long r = 0; r < iters; ++r) {
#pragma GCC unroll 12
        for (int i = 0; i < kChains; ++i) c[i] = _mm512_dpbf16_ps(c[i], a, b);
    }
    for (int i = 0; i < kChains; ++i) _mm512_storeu_ps(state + 16 * i, c[i]);
}

// Runs `iters` rounds of kChains independent FMAs on state (kChains + 2 vectors: the chains,
// then the multiplier and the addend). State comes from and goes back to memory the compiler
// cannot see through, so no chain can be folded or merged.
__attribute__((noinline)) void fma_chains(float* state, long iters) {
    Vec c0 = vload(state + 0 * kLanes), c1 = vload(state + 1 * kLanes),
        c2 = vload(state + 2 * kLanes), c3 = vload(state + 3 * kLanes),
        c4 = vload(state + 4 * kLanes), c5 = vload(state + 5 * kLanes),
        c6 = vload(state + 6 * kLanes), c7 = vload(state + 7 * kLanes),
        c8 = vload(state + 8 * kLanes), c9 = vload(state + 9 * kLanes),
        c10 = vload(state + 10 * kLanes), c11 = vload(state + 11 * kLanes);
    const Vec a = vload(state + 12 * kLanes), b = vload(state + 13 * kLanes);
    for (long r = 0; r < iters; ++r) {
        c0 = vfma(c0, a, b), c1 = vfma(c1, a, b), c2 = vfma(c2, a, b), c3 = vfma(c3, a, b);
        c4 = vfma(c4, a, b), c5 = vfma(c5, a, b), c6 = vfma(c6, a, b), c7 = vfma(c7, a, b);
        c8 = vfma(c8, a, b), c9 = vfma(c9, a, b), c10 = vfma(c10, a, b), c11 = vfma(c11, a, b);
    }
    Vec out[kChains] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};
    for (int i = 0; i < kChains; ++i) vstore(state + i * kLanes, out[i]);
}

// Runs `probe` on every thread for `seconds`; returns GFLOP/s given flops per round.
// `init` fills the operands after the chains start from small values.
template <typename Init, typename Probe>
double run_probe(int threads, double seconds, double flops_per_round, Init init, Probe probe) {
    constexpr long kInner = 1 << 14;
    double total_flops = 0;
    auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : total_flops)
    {
        alignas(64) float state[(kChains + 2) * 16];
        for (int i = 0; i < (kChains + 2) * 16; ++i) state[i] = 1e-3f * (i % 97);
        init(state);
        long rounds = 0;
        do {
            probe(state, kInner);
            ++rounds;
        } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() <
                 seconds);
        total_flops += flops_per_round * kInner * rounds;
    }
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return total_flops / elapsed / 1e9;
}

}  // namespace

double measure_peak_gflops(int threads, double seconds) {
    auto init = [](float* state) {
        for (int i = 0; i < kLanes; ++i) state[kChains * kLanes + i] = 0.999999f;
    };
    return run_probe(threads, seconds, 2.0 * kLanes * kChains, init, fma_chains);
}

double measure_peak_bf16_gflops(int threads, double seconds) {
    if (!native_bf16()) return 0;
    // Both multiplicands hold bf16 pairs (1.0, 2^-20): the chains grow slowly and stay finite.
    auto init = [](float* state) {
        const std::uint32_t pair = 0x3F803580u;
        for (int i = kChains * 16; i < (kChains + 2) * 16; ++i) std::memcpy(state + i, &pair, 4);
    };
    return run_probe(threads, seconds, 64.0 * kChains, init, dpbf16_chains);
}

}  // namespace meshlm::kernels

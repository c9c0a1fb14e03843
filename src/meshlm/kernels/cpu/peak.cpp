// Measures the machine's fp32 FMA peak: each thread runs independent AVX2 FMA chains (enough
// of them to hide the FMA latency) for a fixed time.
#include <immintrin.h>
#include <omp.h>

#include <chrono>

#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {

double measure_peak_gflops(int threads, double seconds) {
    constexpr int kChains = 12;
    constexpr long kInner = 1 << 14;
    double total_flops = 0;
    auto t0 = std::chrono::steady_clock::now();
    double elapsed = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total_flops)
    {
        __m256 acc[kChains];
        for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(0.f);
        const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
        long rounds = 0;
        while (true) {
            for (long r = 0; r < kInner; ++r)
                for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
            ++rounds;
            double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (dt >= seconds) break;
        }
        float sink = 0;
        for (int i = 0; i < kChains; ++i) sink += _mm256_cvtss_f32(acc[i]);
        volatile float keep = sink;
        (void)keep;
        total_flops += 2.0 * 8 * kChains * kInner * rounds;
    }
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return total_flops / elapsed / 1e9;
}

}  // namespace meshlm::kernels

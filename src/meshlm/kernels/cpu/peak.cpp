// Measures the machine's fp32 FMA peak: each thread runs independent FMA chains of the widest
// vectors this build targets (AVX-512 where the compiler may use it, else AVX2; enough chains
// to hide the FMA latency) for a fixed time.
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
#ifdef __AVX512F__
        using Vec = __m512;
        constexpr int kLanes = 16;
        auto fma = [](Vec x, Vec y, Vec z) { return _mm512_fmadd_ps(x, y, z); };
        const Vec a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
#else
        using Vec = __m256;
        constexpr int kLanes = 8;
        auto fma = [](Vec x, Vec y, Vec z) { return _mm256_fmadd_ps(x, y, z); };
        const Vec a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
#endif
        Vec acc[kChains];
        for (int i = 0; i < kChains; ++i) acc[i] = b;
        long rounds = 0;
        while (true) {
            for (long r = 0; r < kInner; ++r)
                for (int i = 0; i < kChains; ++i) acc[i] = fma(acc[i], a, b);
            ++rounds;
            double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (dt >= seconds) break;
        }
        float sink = 0;
        for (int i = 0; i < kChains; ++i) sink += reinterpret_cast<const float*>(&acc[i])[0];
        volatile float keep = sink;
        (void)keep;
        total_flops += 2.0 * kLanes * kChains * kInner * rounds;
    }
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return total_flops / elapsed / 1e9;
}

}  // namespace meshlm::kernels

// Philox4x32-10 and the dropout keep-scale on the GPU: the device twin of core/rng.cpp's
// philox4x32 and cpu/dropout_mask.h, bit for bit, so a mask drawn on either backend is the same
// mask (a CPU forward and a GPU backward, or two ranks on different devices, agree).
//
// Draw X of the stream (seed, stream) is 32-bit word X % 4 of the Philox block at counter X / 4;
// as a uniform it is (word >> 8) * 2^-24, exact in float. Integer-only up to that point, so no
// rounding mode or contraction can make the two backends differ.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace meshlm::kernels::cuda {

struct Philox4 {
    std::uint32_t w[4];
};

__host__ __device__ inline Philox4 philox4x32(std::uint64_t counter, std::uint64_t seed,
                                              std::uint64_t stream) {
    constexpr std::uint32_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57;
    constexpr std::uint32_t kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;
    std::uint32_t c0 = static_cast<std::uint32_t>(counter);
    std::uint32_t c1 = static_cast<std::uint32_t>(counter >> 32);
    std::uint32_t c2 = static_cast<std::uint32_t>(stream);
    std::uint32_t c3 = static_cast<std::uint32_t>(stream >> 32);
    std::uint32_t k0 = static_cast<std::uint32_t>(seed),
                  k1 = static_cast<std::uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round) {
        const std::uint64_t p0 = static_cast<std::uint64_t>(kM0) * c0;
        const std::uint64_t p1 = static_cast<std::uint64_t>(kM1) * c2;
        const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c1 ^ k0;
        const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c3 ^ k1;
        c1 = static_cast<std::uint32_t>(p1);
        c3 = static_cast<std::uint32_t>(p0);
        c0 = n0;
        c2 = n2;
        k0 += kW0;
        k1 += kW1;
    }
    return {{c0, c1, c2, c3}};
}

// The keep-scale of one draw word: 1 / (1 - rate) (`keep`, computed by the caller as 1.f /
// (1.f - rate), as the CPU does) when its uniform >= rate, else 0.
__host__ __device__ inline float dropout_scale(std::uint32_t word, float rate, float keep) {
    return static_cast<float>(word >> 8) * (1.0f / 16777216.0f) >= rate ? keep : 0.f;
}

}  // namespace meshlm::kernels::cuda

// Dropout keep-scales from the counter-based Philox stream of core/rng.h, shared by `dropout`
// and the attention-probability dropout so both draw their masks the same way.
//
// Draw X of the stream (seed, stream) is the X-th Philox(seed, stream).uniform() counted from
// counter 0: 32-bit word X % 4 of the Philox4x32-10 block at counter X / 4, as the uniform
// (word >> 8) * 2^-24 in [0, 1). Element X is kept when that uniform >= rate and then scaled by
// 1 / (1 - rate). Every draw is a pure function of (seed, stream, X), so a mask never depends
// on threads, ranks or batching, and a backward regenerates exactly its forward's mask.
#pragma once

#include <array>
#include <cstdint>

#include "meshlm/core/rng.h"

namespace meshlm::kernels::cpu {

// z[c] = (uniform(first + c) >= rate) ? 1 / (1 - rate) : 0 for c < n.
inline void dropout_scales(float* z, std::uint64_t seed, std::uint64_t stream, std::uint64_t first,
                           int n, float rate) {
    const float keep = 1.f / (1.f - rate);
    const std::array<std::uint32_t, 2> key = {static_cast<std::uint32_t>(seed),
                                              static_cast<std::uint32_t>(seed >> 32)};
    std::uint64_t x = first;
    int c = 0;
    while (c < n) {
        const std::uint64_t block = x >> 2;
        const std::array<std::uint32_t, 4> w = philox4x32(
            {static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32),
             static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(stream >> 32)},
            key);
        for (int k = static_cast<int>(x & 3); k < 4 && c < n; ++k, ++c, ++x)
            z[c] = static_cast<float>(w[k] >> 8) * (1.0f / 16777216.0f) >= rate ? keep : 0.f;
    }
}

}  // namespace meshlm::kernels::cpu

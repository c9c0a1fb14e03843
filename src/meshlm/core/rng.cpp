#include "meshlm/core/rng.h"

#include <cmath>

namespace meshlm {

std::array<std::uint32_t, 4> philox4x32(std::array<std::uint32_t, 4> c,
                                        std::array<std::uint32_t, 2> k) {
    constexpr std::uint32_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57;
    constexpr std::uint32_t kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;
    for (int round = 0; round < 10; ++round) {
        std::uint64_t p0 = std::uint64_t(kM0) * c[0];
        std::uint64_t p1 = std::uint64_t(kM1) * c[2];
        c = {std::uint32_t(p1 >> 32) ^ c[1] ^ k[0], std::uint32_t(p1),
             std::uint32_t(p0 >> 32) ^ c[3] ^ k[1], std::uint32_t(p0)};
        k[0] += kW0;
        k[1] += kW1;
    }
    return c;
}

std::uint32_t Philox::next_u32() {
    if (have_ == 0) {
        block_ = philox4x32({std::uint32_t(counter_), std::uint32_t(counter_ >> 32),
                             std::uint32_t(stream_), std::uint32_t(stream_ >> 32)},
                            {std::uint32_t(seed_), std::uint32_t(seed_ >> 32)});
        ++counter_;
        have_ = 4;
    }
    return block_[4 - have_--];
}

float Philox::uniform() {
    return float(next_u32() >> 8) * (1.0f / 16777216.0f);
}

double Philox::uniform_double() {
    std::uint64_t hi = next_u32() >> 5, lo = next_u32() >> 6;
    return double(hi * 67108864ull + lo) * (1.0 / 9007199254740992.0);
}

float Philox::normal() {
    // Box-Muller on doubles; 1 - u keeps the log argument in (0, 1].
    double u1 = 1.0 - uniform_double(), u2 = uniform_double();
    return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

std::uint64_t Philox::below(std::uint64_t n) {
    return std::uint64_t(uniform_double() * double(n)) % n;
}

}  // namespace meshlm

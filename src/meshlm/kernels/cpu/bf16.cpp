// fp32 <-> bf16 conversions. bf16 is the top half of an fp32: rounding adds half a unit of the
// dropped 16 bits, plus one more when the kept half is odd (ties to even).
#include <cstring>

#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {
namespace {

inline std::uint16_t bits_bf16(float x) {
    std::uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    // Finite inputs; an infinity stays infinite. A NaN whose payload sits in the low half only
    // would round to infinity: training stops on a non-finite loss before that matters.
    return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace

void to_bf16(std::uint16_t* out, const float* in, std::size_t n) {
    const std::ptrdiff_t len = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for simd schedule(static)
    for (std::ptrdiff_t i = 0; i < len; ++i) out[i] = bits_bf16(in[i]);
}

void to_bf16_rows(std::uint16_t* out, const float* in, int rows, int cols, int ld) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; ++r) {
        const float* s = in + static_cast<std::size_t>(r) * ld;
        std::uint16_t* d = out + static_cast<std::size_t>(r) * cols;
#pragma omp simd
        for (int c = 0; c < cols; ++c) d[c] = bits_bf16(s[c]);
    }
}

void round_bf16(float* out, const float* in, std::size_t n) {
    const std::ptrdiff_t len = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for simd schedule(static)
    for (std::ptrdiff_t i = 0; i < len; ++i) {
        const std::uint32_t u = static_cast<std::uint32_t>(bits_bf16(in[i])) << 16;
        std::memcpy(out + i, &u, sizeof u);
    }
}

void from_bf16_in_place(float* buf, std::size_t n) {
    // Value i moves from byte 2i to byte 4i. Going down in halves [ceil(hi / 2), hi), a pass
    // reads bytes [2 lo, 2 hi) and writes [4 lo, 4 hi): apart, since 4 lo >= 2 hi, and what it
    // overwrites (values >= hi) earlier passes have moved. So each pass can run in parallel.
    char* bytes = reinterpret_cast<char*>(buf);
    auto move = [bytes](std::size_t i) {
        std::uint16_t h;
        std::memcpy(&h, bytes + 2 * i, 2);
        const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
        std::memcpy(bytes + 4 * i, &u, 4);
    };
    std::size_t hi = n;
    while (hi > 1) {
        const std::size_t lo = (hi + 1) / 2;
        const std::ptrdiff_t a = static_cast<std::ptrdiff_t>(lo),
                             b = static_cast<std::ptrdiff_t>(hi);
#pragma omp parallel for schedule(static) if (b - a > 4096)
        for (std::ptrdiff_t i = a; i < b; ++i) move(static_cast<std::size_t>(i));
        hi = lo;
    }
    if (n > 0) move(0);
}

void from_bf16_rows(float* out, const std::uint16_t* in, int rows, int cols, int ld) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; ++r) {
        const std::uint16_t* s = in + static_cast<std::size_t>(r) * ld;
        float* d = out + static_cast<std::size_t>(r) * cols;
#pragma omp simd
        for (int c = 0; c < cols; ++c) {
            const std::uint32_t u = static_cast<std::uint32_t>(s[c]) << 16;
            std::memcpy(d + c, &u, sizeof u);
        }
    }
}

void from_bf16(float* out, const std::uint16_t* in, std::size_t n) {
    const std::ptrdiff_t len = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for simd schedule(static)
    for (std::ptrdiff_t i = 0; i < len; ++i) {
        const std::uint32_t u = static_cast<std::uint32_t>(in[i]) << 16;
        std::memcpy(out + i, &u, sizeof u);
    }
}

}  // namespace meshlm::kernels

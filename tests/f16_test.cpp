// IEEE half precision (F16 safetensors, `meshlm convert --dtype f16`): widening is exact and
// rounding goes to nearest, ties to even, overflowing to infinity past 65504. Checked against
// a value table decoded in double from the format's definition, a nearest-value search over it,
// and, where the CPU has F16C, the hardware's own conversions.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "meshlm/io/safetensors_set.h"

namespace meshlm {
namespace {

// The value of an f16 bit pattern by the format's definition, in double.
double decode(std::uint16_t h) {
    const int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
    double v;
    if (exp == 0)
        v = std::ldexp(mant, -24);
    else if (exp == 31)
        v = mant ? std::numeric_limits<double>::quiet_NaN()
                 : std::numeric_limits<double>::infinity();
    else
        v = std::ldexp(1024 + mant, exp - 25);
    return sign ? -v : v;
}

std::uint32_t bits(float x) {
    std::uint32_t u;
    std::memcpy(&u, &x, 4);
    return u;
}

float from_bits(std::uint32_t u) {
    float x;
    std::memcpy(&x, &u, 4);
    return x;
}

// The nearest f16 of a finite x by search over the positive finite values (0x0000..0x7bff):
// the closer of the two around |x|, the even pattern on a tie; infinity once |x| reaches
// 65520, the midpoint between 65504 and the first power of two past it.
std::uint16_t nearest_f16(float x) {
    const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    const double a = std::fabs(static_cast<double>(x));
    if (a >= 65520.0) return sign | 0x7c00;
    std::uint16_t lo = 0, hi = 0x7bff;  // largest pattern with value <= a, by bisection
    while (lo < hi) {
        const std::uint16_t mid = static_cast<std::uint16_t>((lo + hi + 1) / 2);
        if (decode(mid) <= a)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (decode(lo) == a || lo == 0x7bff) return sign | lo;
    const std::uint16_t up = lo + 1;
    const double dlo = a - decode(lo), dup = decode(up) - a;
    if (dlo != dup) return sign | (dlo < dup ? lo : up);
    return sign | ((lo & 1) ? up : lo);
}

// Floats around every f16 boundary: each finite f16 value, the midpoints to its neighbours,
// one float ulp either side of those; plus random bit patterns over the whole float range
// and the specials.
std::vector<float> probes() {
    std::vector<float> v;
    for (std::uint32_t h = 0; h < 0x7c00; ++h) {
        const double lo = decode(static_cast<std::uint16_t>(h));
        const double hi = h == 0x7bff ? 65536.0 : decode(static_cast<std::uint16_t>(h + 1));
        for (double c : {lo, (lo + hi) / 2}) {
            const float f = static_cast<float>(c);  // exact: both fit in a float
            for (float g : {f, std::nextafter(f, 0.f), std::nextafter(f, 1e30f)}) {
                v.push_back(g);
                v.push_back(-g);
            }
        }
    }
    std::mt19937 gen(7);
    for (int i = 0; i < 1 << 20; ++i) {
        const float f = from_bits(static_cast<std::uint32_t>(gen()));
        if (std::isfinite(f)) v.push_back(f);
    }
    for (float f : {0.f, -0.f, 65504.f, 65519.996f, 65520.f, 1e30f, -1e30f, 0x1p-25f, 0x1.0p-24f,
                    0x1.8p-25f, 0x1.0000002p-25f, std::numeric_limits<float>::denorm_min()})
        v.push_back(f);
    return v;
}

TEST(F16, WideningIsExactForEveryPattern) {
    for (std::uint32_t h = 0; h <= 0xffff; ++h) {
        const float got = f32_from_f16(static_cast<std::uint16_t>(h));
        const double want = decode(static_cast<std::uint16_t>(h));
        if (std::isnan(want)) {
            ASSERT_TRUE(std::isnan(got)) << std::hex << h;
            EXPECT_NE(bits(got) & 0x400000u, 0u) << "quiet NaN " << std::hex << h;
        } else {
            ASSERT_EQ(static_cast<double>(got), want) << std::hex << h;
            ASSERT_EQ(std::signbit(got), (h & 0x8000) != 0) << std::hex << h;
        }
    }
}

TEST(F16, RoundsToNearestTiesToEven) {
    for (float x : probes())
        ASSERT_EQ(f16_from_f32(x), nearest_f16(x)) << x << " (bits " << std::hex << bits(x) << ")";
    // Specials.
    EXPECT_EQ(f16_from_f32(std::numeric_limits<float>::infinity()), 0x7c00);
    EXPECT_EQ(f16_from_f32(-std::numeric_limits<float>::infinity()), 0xfc00);
    const std::uint16_t nan = f16_from_f32(std::numeric_limits<float>::quiet_NaN());
    EXPECT_EQ(nan & 0x7c00, 0x7c00);
    EXPECT_NE(nan & 0x3ff, 0);
    // Every f16 value survives the round trip.
    for (std::uint32_t h = 0; h <= 0xffff; ++h)
        if ((h & 0x7c00) != 0x7c00 || (h & 0x3ff) == 0)
            ASSERT_EQ(f16_from_f32(f32_from_f16(static_cast<std::uint16_t>(h))), h)
                << std::hex << h;
}

__attribute__((target("f16c"))) float hw_widen(std::uint16_t h) {
    return _cvtsh_ss(h);
}
__attribute__((target("f16c"))) std::uint16_t hw_round(float x) {
    return static_cast<std::uint16_t>(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT));
}

TEST(F16, AgreesWithTheCpusF16c) {
    if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "this CPU has no F16C";
    for (std::uint32_t h = 0; h <= 0xffff; ++h) {
        const float want = hw_widen(static_cast<std::uint16_t>(h));
        const float got = f32_from_f16(static_cast<std::uint16_t>(h));
        if (std::isnan(want))
            ASSERT_TRUE(std::isnan(got)) << std::hex << h;
        else
            ASSERT_EQ(bits(got), bits(want)) << std::hex << h;
    }
    for (float x : probes()) ASSERT_EQ(f16_from_f32(x), hw_round(x)) << x;
}

}  // namespace
}  // namespace meshlm

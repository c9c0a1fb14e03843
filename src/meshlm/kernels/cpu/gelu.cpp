// GELU, tanh approximation (GPT-2 "gelu_new").
//   y  = 0.5 x (1 + tanh(u)),  u = k (x + 0.044715 x^3),  k = sqrt(2/pi)
//   dy/dx = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) k (1 + 3 * 0.044715 x^2)
// tanh(u) = 1 - 2 / (exp(2u) + 1), with our vector exp.
#include "meshlm/kernels/cpu/vec_math.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

inline __m256 tanh_of_u(__m256 x, __m256* x2_out) {
    __m256 x2 = _mm256_mul_ps(x, x);
    *x2_out = x2;
    __m256 u = _mm256_mul_ps(_mm256_set1_ps(kSqrt2OverPi),
                             _mm256_fmadd_ps(_mm256_mul_ps(x2, x), _mm256_set1_ps(kCubic), x));
    __m256 e = cpu::exp256(_mm256_add_ps(u, u));
    __m256 one = _mm256_set1_ps(1.f);
    return _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.f), _mm256_add_ps(e, one)));
}

inline __m256 gelu8(__m256 x) {
    __m256 x2;
    __m256 th = tanh_of_u(x, &x2);
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x),
                         _mm256_add_ps(_mm256_set1_ps(1.f), th));
}

inline __m256 gelu_grad8(__m256 x, __m256 g) {
    __m256 x2;
    __m256 th = tanh_of_u(x, &x2);
    __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.f);
    __m256 du = _mm256_mul_ps(_mm256_set1_ps(kSqrt2OverPi),
                              _mm256_fmadd_ps(_mm256_set1_ps(3.f * kCubic), x2, one));
    __m256 sech2 = _mm256_fnmadd_ps(th, th, one);
    __m256 d = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_mul_ps(half, x), sech2), du,
                               _mm256_mul_ps(half, _mm256_add_ps(one, th)));
    return _mm256_mul_ps(d, g);
}

// Applies f to 8-float chunks over [0, n), with a padded tail.
template <typename F>
void map8(float* out, const float* a, const float* b, std::size_t n, F f) {
    std::ptrdiff_t full = static_cast<std::ptrdiff_t>(n / 8);
    // Small inputs (decoding) cost less than waking the other threads; the result is the same.
#pragma omp parallel for schedule(static) if (full >= 4096)
    for (std::ptrdiff_t i = 0; i < full; ++i)
        _mm256_storeu_ps(out + 8 * i, f(_mm256_loadu_ps(a + 8 * i),
                                        b ? _mm256_loadu_ps(b + 8 * i) : _mm256_setzero_ps()));
    std::size_t rest = n - 8 * full;
    if (rest) {
        alignas(32) float buf[8];
        __m256 va = cpu::load_partial(a + 8 * full, static_cast<int>(rest), 0.f);
        __m256 vb =
            b ? cpu::load_partial(b + 8 * full, static_cast<int>(rest), 0.f) : _mm256_setzero_ps();
        _mm256_store_ps(buf, f(va, vb));
        for (std::size_t i = 0; i < rest; ++i) out[8 * full + i] = buf[i];
    }
}

}  // namespace

void gelu_forward(float* out, const float* x, std::size_t n) {
    map8(out, x, nullptr, n, [](__m256 a, __m256) { return gelu8(a); });
}

void gelu_backward(float* dx, const float* x, const float* dout, std::size_t n) {
    map8(dx, x, dout, n, [](__m256 a, __m256 g) { return gelu_grad8(a, g); });
}

void residual_forward(float* out, const float* a, const float* b, std::size_t n) {
    map8(out, a, b, n, [](__m256 x, __m256 y) { return _mm256_add_ps(x, y); });
}

}  // namespace meshlm::kernels

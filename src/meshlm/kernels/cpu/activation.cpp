// Element-wise activations, their gated (GLU) forms, and the residual add, 8 floats at a time.
//   gelu_tanh (GPT-2 "gelu_new"): y = 0.5 x (1 + tanh u),  u = k (x + 0.044715 x^3), k = sqrt(2/pi)
//       y' = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) k (1 + 3 * 0.044715 x^2)
//       tanh u = 1 - 2 / (exp(2u) + 1)
//   gelu (exact):  y = x Phi(x),  y' = Phi(x) + x phi(x),  phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
//       Phi(x) = erfc(-x / sqrt 2) / 2 with erfc from Numerical Recipes' erfcc (relative error
//       < 1.2e-7 everywhere, so Phi keeps its relative accuracy deep in the negative tail
//       instead of cancelling in 1 + erf).
//   relu:   y = max(x, 0),  y' = [x > 0]
//   sqrelu: y = max(x, 0)^2,  y' = 2 max(x, 0)
//   silu:   y = x sg,  sg = 1 / (1 + exp(-x)),  y' = sg (1 + x (1 - sg))
//   GLU over h = gate | up: out = act(gate) up,  dgate = act'(gate) up dout,  dup = act(gate) dout.
// Every exp is our vector exp (vec_math.h), so results do not depend on the libm.
#include <cstddef>
#include <utility>

#include "meshlm/core/error.h"
#include "meshlm/kernels/cpu/vec_math.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {
namespace {

inline __m256 set1(float x) {
    return _mm256_set1_ps(x);
}

struct GeluTanh {
    static constexpr float kSqrt2OverPi = 0.7978845608028654f;
    static constexpr float kCubic = 0.044715f;
    static __m256 tanh_of_u(__m256 x, __m256* x2_out) {
        __m256 x2 = _mm256_mul_ps(x, x);
        *x2_out = x2;
        __m256 u = _mm256_mul_ps(set1(kSqrt2OverPi),
                                 _mm256_fmadd_ps(_mm256_mul_ps(x2, x), set1(kCubic), x));
        __m256 e = cpu::exp256(_mm256_add_ps(u, u));
        __m256 one = set1(1.f);
        return _mm256_sub_ps(one, _mm256_div_ps(set1(2.f), _mm256_add_ps(e, one)));
    }
    static __m256 f(__m256 x) {
        __m256 x2;
        __m256 th = tanh_of_u(x, &x2);
        return _mm256_mul_ps(_mm256_mul_ps(set1(0.5f), x), _mm256_add_ps(set1(1.f), th));
    }
    static __m256 df(__m256 x) {
        __m256 x2;
        __m256 th = tanh_of_u(x, &x2);
        __m256 half = set1(0.5f), one = set1(1.f);
        __m256 du = _mm256_mul_ps(set1(kSqrt2OverPi), _mm256_fmadd_ps(set1(3.f * kCubic), x2, one));
        __m256 sech2 = _mm256_fnmadd_ps(th, th, one);
        return _mm256_fmadd_ps(_mm256_mul_ps(_mm256_mul_ps(half, x), sech2), du,
                               _mm256_mul_ps(half, _mm256_add_ps(one, th)));
    }
};

struct GeluErf {
    // Phi(x), the standard normal CDF.
    static __m256 cdf(__m256 x) {
        const __m256 z = _mm256_andnot_ps(set1(-0.f), _mm256_mul_ps(x, set1(0.70710678118654752f)));
        const __m256 t = _mm256_div_ps(set1(1.f), _mm256_fmadd_ps(set1(0.5f), z, set1(1.f)));
        __m256 p = set1(0.17087277f);
        p = _mm256_fmadd_ps(p, t, set1(-0.82215223f));
        p = _mm256_fmadd_ps(p, t, set1(1.48851587f));
        p = _mm256_fmadd_ps(p, t, set1(-1.13520398f));
        p = _mm256_fmadd_ps(p, t, set1(0.27886807f));
        p = _mm256_fmadd_ps(p, t, set1(-0.18628806f));
        p = _mm256_fmadd_ps(p, t, set1(0.09678418f));
        p = _mm256_fmadd_ps(p, t, set1(0.37409196f));
        p = _mm256_fmadd_ps(p, t, set1(1.00002368f));
        p = _mm256_fmadd_ps(p, t, set1(-1.26551223f));
        // erfc(z) = t exp(-z^2 + p(t)); half of it is the tail mass beyond |x|.
        const __m256 tail =
            _mm256_mul_ps(set1(0.5f), _mm256_mul_ps(t, cpu::exp256(_mm256_fnmadd_ps(z, z, p))));
        const __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
        return _mm256_blendv_ps(_mm256_sub_ps(set1(1.f), tail), tail, neg);
    }
    static __m256 f(__m256 x) { return _mm256_mul_ps(x, cdf(x)); }
    static __m256 df(__m256 x) {
        const __m256 pdf =
            _mm256_mul_ps(set1(0.39894228040143268f),
                          cpu::exp256(_mm256_mul_ps(set1(-0.5f), _mm256_mul_ps(x, x))));
        return _mm256_fmadd_ps(x, pdf, cdf(x));
    }
};

struct Relu {
    static __m256 f(__m256 x) { return _mm256_max_ps(x, _mm256_setzero_ps()); }
    static __m256 df(__m256 x) {
        return _mm256_and_ps(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ), set1(1.f));
    }
};

struct SqRelu {
    static __m256 f(__m256 x) {
        const __m256 r = _mm256_max_ps(x, _mm256_setzero_ps());
        return _mm256_mul_ps(r, r);
    }
    static __m256 df(__m256 x) {
        const __m256 r = _mm256_max_ps(x, _mm256_setzero_ps());
        return _mm256_add_ps(r, r);
    }
};

struct Silu {
    static __m256 sigmoid(__m256 x) {
        const __m256 one = set1(1.f);
        return _mm256_div_ps(
            one, _mm256_add_ps(one, cpu::exp256(_mm256_sub_ps(_mm256_setzero_ps(), x))));
    }
    static __m256 f(__m256 x) { return _mm256_mul_ps(x, sigmoid(x)); }
    static __m256 df(__m256 x) {
        const __m256 sg = sigmoid(x), one = set1(1.f);
        return _mm256_mul_ps(sg, _mm256_fmadd_ps(x, _mm256_sub_ps(one, sg), one));
    }
};

// Calls fn(Ops{}) with the operations of `act`, so the loops are compiled once per activation
// with no per-element branch.
template <typename Fn>
void with_act(Act act, Fn&& fn) {
    switch (act) {
        case Act::gelu_tanh:
            return fn(GeluTanh{});
        case Act::gelu:
            return fn(GeluErf{});
        case Act::relu:
            return fn(Relu{});
        case Act::sqrelu:
            return fn(SqRelu{});
        case Act::silu:
            return fn(Silu{});
    }
    MESHLM_CHECK(false, "unknown activation ", static_cast<int>(act));
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

inline void store_partial(float* p, __m256 v, int n) {
    alignas(32) float buf[8];
    _mm256_store_ps(buf, v);
    for (int i = 0; i < n; ++i) p[i] = buf[i];
}

// Runs f(gate, up, dout, f0, n) over each row's 8-column chunks [f0, f0 + n), n <= 8; the
// tail chunk is loaded padded with zeros.
template <typename F>
void glu_rows(int N, int F_, F f) {
    const bool parallel = static_cast<long>(N) * F_ >= 32768;
#pragma omp parallel for schedule(static) if (parallel)
    for (int r = 0; r < N; ++r)
        for (int c = 0; c < F_; c += 8) f(r, c, F_ - c < 8 ? F_ - c : 8);
}

inline __m256 load(const float* p, int n) {
    return n == 8 ? _mm256_loadu_ps(p) : cpu::load_partial(p, n, 0.f);
}

}  // namespace

void activation_forward(Act act, float* out, const float* x, std::size_t n) {
    with_act(act, [&](auto ops) {
        map8(out, x, nullptr, n, [](__m256 a, __m256) { return decltype(ops)::f(a); });
    });
}

void activation_backward(Act act, float* dx, const float* x, const float* dout, std::size_t n) {
    with_act(act, [&](auto ops) {
        map8(dx, x, dout, n,
             [](__m256 a, __m256 g) { return _mm256_mul_ps(decltype(ops)::df(a), g); });
    });
}

void glu_forward(Act act, float* out, const float* h, int N, int F) {
    with_act(act, [&](auto ops) {
        using Ops = decltype(ops);
        glu_rows(N, F, [&](int r, int c, int n) {
            const float* gate = h + static_cast<std::size_t>(r) * 2 * F + c;
            const __m256 y = _mm256_mul_ps(Ops::f(load(gate, n)), load(gate + F, n));
            float* o = out + static_cast<std::size_t>(r) * F + c;
            if (n == 8) {
                _mm256_storeu_ps(o, y);
            } else {
                store_partial(o, y, n);
            }
        });
    });
}

void glu_backward(Act act, float* dh, const float* h, const float* dout, int N, int F) {
    with_act(act, [&](auto ops) {
        using Ops = decltype(ops);
        glu_rows(N, F, [&](int r, int c, int n) {
            const std::size_t off = static_cast<std::size_t>(r) * 2 * F + c;
            const __m256 gate = load(h + off, n), up = load(h + off + F, n);
            const __m256 g = load(dout + static_cast<std::size_t>(r) * F + c, n);
            const __m256 dgate = _mm256_mul_ps(_mm256_mul_ps(Ops::df(gate), up), g);
            const __m256 dup = _mm256_mul_ps(Ops::f(gate), g);
            if (n == 8) {
                _mm256_storeu_ps(dh + off, dgate);
                _mm256_storeu_ps(dh + off + F, dup);
            } else {
                store_partial(dh + off, dgate, n);
                store_partial(dh + off + F, dup, n);
            }
        });
    });
}

void residual_forward(float* out, const float* a, const float* b, std::size_t n) {
    map8(out, a, b, n, [](__m256 x, __m256 y) { return _mm256_add_ps(x, y); });
}

void bias_residual(float* out, const float* b1, const float* b2, const float* r, int N, int C) {
    if (!b1) std::swap(b1, b2);  // one present bias is b1
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) {
        float* o = out + static_cast<std::size_t>(n) * C;
        const float* rn = r + static_cast<std::size_t>(n) * C;
        if (b2) {
#pragma omp simd
            for (int c = 0; c < C; ++c) o[c] = ((o[c] + b1[c]) + b2[c]) + rn[c];
        } else if (b1) {
#pragma omp simd
            for (int c = 0; c < C; ++c) o[c] = (o[c] + b1[c]) + rn[c];
        } else {
#pragma omp simd
            for (int c = 0; c < C; ++c) o[c] = o[c] + rn[c];
        }
    }
}

}  // namespace meshlm::kernels

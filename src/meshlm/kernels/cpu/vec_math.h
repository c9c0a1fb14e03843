// AVX2 helpers shared by the CPU kernels: a vectorized expf, horizontal reductions and the row
// reductions built on them. Our own exp keeps results identical across libm versions
// (determinism across machines). Each row reduction has one summation order (8 lanes, their
// horizontal sum, then the tail in order) that every kernel shares, so a decode step and the
// full forward pass agree bitwise.
#pragma once

#include <immintrin.h>

#include <cmath>

namespace meshlm::kernels::cpu {

// exp(x) for 8 floats; relative error ~2 ulp on [-87, 88], 0 below -87.3, inf above 88.7.
inline __m256 exp256(__m256 x) {
    const __m256 hi = _mm256_set1_ps(88.3762626647949f);
    const __m256 lo = _mm256_set1_ps(-87.3365447504f);
    x = _mm256_min_ps(x, hi);
    __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    x = _mm256_max_ps(x, lo);
    // exp(x) = 2^n * exp(r), n = round(x / ln2), r = x - n ln2 (split ln2 for precision).
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    __m256 r2 = _mm256_mul_ps(r, r);
    p = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 res = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return _mm256_andnot_ps(under, res);
}

inline float exp_scalar(float x) {
    alignas(32) float buf[8] = {x};
    _mm256_store_ps(buf, exp256(_mm256_load_ps(buf)));
    return buf[0];
}

inline float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

inline float hmax256(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Loads the first n (< 8) floats of p, padding with `fill`.
inline __m256 load_partial(const float* p, int n, float fill) {
    alignas(32) float buf[8];
    for (int i = 0; i < 8; ++i) buf[i] = i < n ? p[i] : fill;
    return _mm256_load_ps(buf);
}

// max(init, x[0..n)).
inline float max_of(const float* x, int n, float init = -INFINITY) {
    __m256 m = _mm256_set1_ps(init);
    int c = 0;
    for (; c + 8 <= n; c += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + c));
    float r = hmax256(m);
    for (; c < n; ++c) r = x[c] > r ? x[c] : r;
    return r;
}

// Sum over c < n of exp(x[c] - shift); with out non-null also out[c] = exp(x[c] - shift) (out
// may be x).
inline float sum_exp(const float* x, int n, float shift, float* out) {
    const __m256 vs = _mm256_set1_ps(shift);
    __m256 acc = _mm256_setzero_ps();
    int c = 0;
    for (; c + 8 <= n; c += 8) {
        const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + c), vs));
        if (out) _mm256_storeu_ps(out + c, e);
        acc = _mm256_add_ps(acc, e);
    }
    float sum = hsum256(acc);
    for (; c < n; ++c) {
        const float e = exp_scalar(x[c] - shift);
        if (out) out[c] = e;
        sum += e;
    }
    return sum;
}

// a . b over n floats.
inline float dot(const float* a, const float* b, int n) {
    __m256 acc = _mm256_setzero_ps();
    int c = 0;
    for (; c + 8 <= n; c += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + c), _mm256_loadu_ps(b + c), acc);
    float r = hsum256(acc);
    for (; c < n; ++c) r += a[c] * b[c];
    return r;
}

}  // namespace meshlm::kernels::cpu

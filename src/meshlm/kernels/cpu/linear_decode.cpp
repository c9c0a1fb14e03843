// Linear layers for decoding: y[M,O] = x[M,I] W[O,I]^T + bias for a few rows M (one per
// sequence decoded together). At such M the product is bound by reading W, not by arithmetic,
// so each weight row is loaded once and multiplied with up to 4 rows of x while it is in
// registers; threads split the output rows. W may be fp32 or bf16 (upper half of an fp32,
// widened back to fp32 on load: bf16 halves the bytes read, products and sums stay fp32).
//
// Every y element is one (row, sequence) accumulator fed in the same order whatever M, the
// tiling or the thread count, so a sequence's result never depends on what it is batched with.
#include <omp.h>

#include <immintrin.h>
#include <cstring>

#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {
namespace {

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
constexpr int kRows = 4;  // weight rows per tile
constexpr int kSeqs = 4;  // rows of x per tile
#else
constexpr int kRows = 4;  // 16 ymm registers: 12 accumulators, 3 rows of x, one of W
constexpr int kSeqs = 3;
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)

inline __m512 load16(const float* p, __mmask16 k) {
    return _mm512_maskz_loadu_ps(k, p);
}
// (The masked forms with a full mask avoid GCC 12's false "uninitialized" warnings about
// the plain forms' undefined pass-through operand.)
inline __m512 load16(const std::uint16_t* p, __mmask16 k) {
    __m512i w = _mm512_maskz_cvtepu16_epi32(0xFFFF, _mm256_maskz_loadu_epi16(k, p));
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, w, 16));
}
inline float hsum(__m512 v) {
    v = _mm512_add_ps(v, _mm512_mask_shuffle_f32x4(v, 0xFFFF, v, v, 0x4E));  // + other half
    v = _mm512_add_ps(v, _mm512_mask_shuffle_f32x4(v, 0xFFFF, v, v, 0xB1));  // + next 128 bits
    __m128 s = _mm512_mask_extractf32x4_ps(_mm_setzero_ps(), 0xF, v, 0);
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// y[m, o0 + r] for r < R, m < MT.
template <int R, int MT, typename WT>
void tile(float* y, const float* x, const WT* W, const float* bias, int o0, int I, int O) {
    __m512 acc[R][MT];
    for (int r = 0; r < R; ++r)
        for (int m = 0; m < MT; ++m) acc[r][m] = _mm512_setzero_ps();
    for (int i = 0; i < I; i += 16) {
        const __mmask16 k = I - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (I - i)) - 1);
        __m512 xv[MT];
        for (int m = 0; m < MT; ++m) xv[m] = load16(x + static_cast<std::size_t>(m) * I + i, k);
        for (int r = 0; r < R; ++r) {
            const WT* wr = W + static_cast<std::size_t>(o0 + r) * I + i;
            // The same column of the next tile's rows: the hardware prefetcher alone keeps too
            // few lines in flight for R interleaved streams (bf16 gains ~40% bandwidth).
            _mm_prefetch(reinterpret_cast<const char*>(wr + static_cast<std::size_t>(R) * I),
                         _MM_HINT_T0);
            __m512 w = load16(wr, k);
            for (int m = 0; m < MT; ++m) acc[r][m] = _mm512_fmadd_ps(w, xv[m], acc[r][m]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int m = 0; m < MT; ++m)
            y[static_cast<std::size_t>(m) * O + o0 + r] =
                hsum(acc[r][m]) + (bias ? bias[o0 + r] : 0.f);
}

#elif defined(__AVX2__) && defined(__FMA__)

inline __m256 load8(const float* p) {
    return _mm256_loadu_ps(p);
}
inline __m256 load8(const std::uint16_t* p) {
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// y[m, o0 + r] for r < R, m < MT: 8 columns at a time, the last partial block through a
// zero-padded copy (zeros add nothing, so every element is fed in the same order whatever M).
template <int R, int MT, typename WT>
void tile(float* y, const float* x, const WT* W, const float* bias, int o0, int I, int O) {
    __m256 acc[R][MT];
    for (int r = 0; r < R; ++r)
        for (int m = 0; m < MT; ++m) acc[r][m] = _mm256_setzero_ps();
    const int I8 = I & ~7;
    for (int i = 0; i < I8; i += 8) {
        __m256 xv[MT];
        for (int m = 0; m < MT; ++m) xv[m] = load8(x + static_cast<std::size_t>(m) * I + i);
        for (int r = 0; r < R; ++r) {
            const WT* wr = W + static_cast<std::size_t>(o0 + r) * I + i;
            _mm_prefetch(reinterpret_cast<const char*>(wr + static_cast<std::size_t>(R) * I),
                         _MM_HINT_T0);
            __m256 w = load8(wr);
            for (int m = 0; m < MT; ++m) acc[r][m] = _mm256_fmadd_ps(w, xv[m], acc[r][m]);
        }
    }
    if (I8 < I) {
        const int n = I - I8;
        __m256 xv[MT];
        for (int m = 0; m < MT; ++m) {
            alignas(32) float b[8] = {};
            for (int j = 0; j < n; ++j) b[j] = x[static_cast<std::size_t>(m) * I + I8 + j];
            xv[m] = _mm256_load_ps(b);
        }
        for (int r = 0; r < R; ++r) {
            alignas(32) WT b[8] = {};
            for (int j = 0; j < n; ++j) b[j] = W[static_cast<std::size_t>(o0 + r) * I + I8 + j];
            __m256 w = load8(b);
            for (int m = 0; m < MT; ++m) acc[r][m] = _mm256_fmadd_ps(w, xv[m], acc[r][m]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int m = 0; m < MT; ++m)
            y[static_cast<std::size_t>(m) * O + o0 + r] =
                hsum(acc[r][m]) + (bias ? bias[o0 + r] : 0.f);
}

#else  // portable fallback: same contract, plain loops

inline float widen(float w) {
    return w;
}
inline float widen(std::uint16_t w) {
    std::uint32_t u = static_cast<std::uint32_t>(w) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

template <int R, int MT, typename WT>
void tile(float* y, const float* x, const WT* W, const float* bias, int o0, int I, int O) {
    for (int r = 0; r < R; ++r)
        for (int m = 0; m < MT; ++m) {
            const WT* w = W + static_cast<std::size_t>(o0 + r) * I;
            const float* xm = x + static_cast<std::size_t>(m) * I;
            float s = 0.f;
            for (int i = 0; i < I; ++i) s += widen(w[i]) * xm[i];
            y[static_cast<std::size_t>(m) * O + o0 + r] = s + (bias ? bias[o0 + r] : 0.f);
        }
}

#endif

template <int R, typename WT>
void tile_seqs(float* y, const float* x, const WT* W, const float* bias, int o0, int I, int O,
               int mt) {
    switch (mt) {
        case 1:
            return tile<R, 1>(y, x, W, bias, o0, I, O);
        case 2:
            return tile<R, 2>(y, x, W, bias, o0, I, O);
        case 3:
            return tile<R, 3>(y, x, W, bias, o0, I, O);
        default:
            return tile<R, 4>(y, x, W, bias, o0, I, O);
    }
}

template <typename WT>
void linear_decode_impl(float* y, const float* x, const WT* W, const float* bias, int M, int I,
                        int O) {
    const int tiles = (O + kRows - 1) / kRows;
#pragma omp parallel
    {
        const int nt = omp_get_num_threads(), t = omp_get_thread_num();
        const int t0 = static_cast<int>(static_cast<long>(tiles) * t / nt);
        const int t1 = static_cast<int>(static_cast<long>(tiles) * (t + 1) / nt);
        for (int tl = t0; tl < t1; ++tl) {
            const int o0 = tl * kRows, rows = O - o0 < kRows ? O - o0 : kRows;
            for (int m0 = 0; m0 < M; m0 += kSeqs) {
                const int mt = M - m0 < kSeqs ? M - m0 : kSeqs;
                float* ym = y + static_cast<std::size_t>(m0) * O;
                const float* xm = x + static_cast<std::size_t>(m0) * I;
                if (rows == kRows) {
                    tile_seqs<kRows>(ym, xm, W, bias, o0, I, O, mt);
                } else {
                    for (int r = 0; r < rows; ++r) tile_seqs<1>(ym, xm, W, bias, o0 + r, I, O, mt);
                }
            }
        }
    }
}

}  // namespace

void linear_decode(float* y, const float* x, const float* W, const float* bias, int M, int I,
                   int O) {
    linear_decode_impl(y, x, W, bias, M, I, O);
}

void linear_decode_bf16(float* y, const float* x, const std::uint16_t* W, const float* bias, int M,
                        int I, int O) {
    linear_decode_impl(y, x, W, bias, M, I, O);
}

}  // namespace meshlm::kernels

// Causal multi-head self-attention, tiled like FlashAttention-2 so memory is O(block * T) per
// thread and never O(T^2).
//
// Per (batch b, head h), with Q, K, V the [T, D] slices of qkv and s = 1/sqrt(D):
//   forward:  S = s Q K^T (causal), P = softmax(S), O = P V, lse = logsumexp(S) per row.
//             Key blocks are visited with an online softmax: running max m and sum l per row,
//             O rescaled by exp(m_old - m_new) whenever the max grows.
//   backward: P is recomputed from S and lse; Dvec = rowsum(dO * O);
//             dV += P^T dO,  dP = dO V^T,  dS = P * (dP - Dvec),
//             dQ += s dS K,  dK += s dS^T Q.
// Each (b, h) is owned by one thread and written only by it: deterministic, no atomics.
#include <cmath>

#include "meshlm/core/error.h"
#include "meshlm/kernels/cpu/vec_math.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {
namespace {

constexpr int kBlock = 64;  // query and key block size
constexpr int kMaxHeadDim = 256;

// Number of keys of the block starting at j0 (of nk) that query row i may attend to.
inline int causal_limit(int i, int j0, int nk) {
    int lim = i - j0 + 1;
    return lim < 0 ? 0 : (lim > nk ? nk : lim);
}

// p[c] = exp(s[c] - shift) for c < lim, 0 for lim <= c < n. Returns the sum.
inline float exp_row(float* p, const float* s, int lim, int n, float shift) {
    __m256 acc = _mm256_setzero_ps(), vs = _mm256_set1_ps(shift);
    int c = 0;
    for (; c + 8 <= lim; c += 8) {
        __m256 e = cpu::exp256(_mm256_sub_ps(_mm256_loadu_ps(s + c), vs));
        _mm256_storeu_ps(p + c, e);
        acc = _mm256_add_ps(acc, e);
    }
    float sum = cpu::hsum256(acc);
    for (; c < lim; ++c) {
        p[c] = cpu::exp_scalar(s[c] - shift);
        sum += p[c];
    }
    for (; c < n; ++c) p[c] = 0.f;
    return sum;
}

}  // namespace

void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int C, int H) {
    const int D = C / H, ld = 3 * C;
    const float s = 1.f / std::sqrt(static_cast<float>(D));
    MESHLM_CHECK(D <= kMaxHeadDim, "head dim ", D, " exceeds ", kMaxHeadDim);
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * H; ++bh) {
        const int b = bh / H, h = bh % H;
        const float* Q = qkv + static_cast<std::size_t>(b) * T * ld + h * D;
        const float* K = Q + C;
        const float* V = Q + 2 * C;
        float* O = out + static_cast<std::size_t>(b) * T * C + h * D;
        float* L = lse + static_cast<std::size_t>(bh) * T;
        alignas(64) float S[kBlock * kBlock];
        alignas(64) float acc[kBlock * kMaxHeadDim];
        float m[kBlock], l[kBlock];
        for (int i0 = 0; i0 < T; i0 += kBlock) {
            const int nq = T - i0 < kBlock ? T - i0 : kBlock;
            for (int r = 0; r < nq; ++r) m[r] = -INFINITY, l[r] = 0.f;
            for (int x = 0; x < nq * D; ++x) acc[x] = 0.f;
            for (int j0 = 0; j0 < i0 + nq; j0 += kBlock) {
                const int nk = i0 + nq - j0 < kBlock ? i0 + nq - j0 : kBlock;
                gemm(false, true, nq, nk, D, s, Q + static_cast<std::size_t>(i0) * ld, ld,
                     K + static_cast<std::size_t>(j0) * ld, ld, 0.f, S, kBlock);
                for (int r = 0; r < nq; ++r) {
                    float* row = S + r * kBlock;
                    const int lim = causal_limit(i0 + r, j0, nk);
                    if (lim == 0) {
                        for (int c = 0; c < nk; ++c) row[c] = 0.f;
                        continue;
                    }
                    float mx = m[r];
                    for (int c = 0; c < lim; ++c) mx = row[c] > mx ? row[c] : mx;
                    const float corr = cpu::exp_scalar(m[r] - mx);
                    l[r] = l[r] * corr + exp_row(row, row, lim, nk, mx);
                    m[r] = mx;
                    if (corr != 1.f)
                        for (int d = 0; d < D; ++d) acc[r * D + d] *= corr;
                }
                gemm(false, false, nq, D, nk, 1.f, S, kBlock, V + static_cast<std::size_t>(j0) * ld,
                     ld, 1.f, acc, D);
            }
            for (int r = 0; r < nq; ++r) {
                float inv = 1.f / l[r];
                float* o = O + static_cast<std::size_t>(i0 + r) * C;
                for (int d = 0; d < D; ++d) o[d] = acc[r * D + d] * inv;
                L[i0 + r] = m[r] + std::log(l[r]);
            }
        }
    }
}

void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse,
                        const float* qkv, int B, int T, int C, int H) {
    const int D = C / H, ld = 3 * C;
    const float s = 1.f / std::sqrt(static_cast<float>(D));
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * H; ++bh) {
        const int b = bh / H, h = bh % H;
        const std::size_t base = static_cast<std::size_t>(b) * T * ld + h * D;
        const float *Q = qkv + base, *K = Q + C, *V = Q + 2 * C;
        float *dQ = dqkv + base, *dK = dQ + C, *dV = dQ + 2 * C;
        const float* dO = dout + static_cast<std::size_t>(b) * T * C + h * D;
        const float* O = out + static_cast<std::size_t>(b) * T * C + h * D;
        const float* L = lse + static_cast<std::size_t>(bh) * T;
        for (int t = 0; t < T; ++t)
            for (int d = 0; d < D; ++d) {
                std::size_t o = static_cast<std::size_t>(t) * ld + d;
                dQ[o] = 0.f, dK[o] = 0.f, dV[o] = 0.f;
            }
        alignas(64) float P[kBlock * kBlock];
        alignas(64) float dP[kBlock * kBlock];
        float Dvec[kBlock];
        for (int i0 = 0; i0 < T; i0 += kBlock) {
            const int nq = T - i0 < kBlock ? T - i0 : kBlock;
            for (int r = 0; r < nq; ++r) {
                const float* a = dO + static_cast<std::size_t>(i0 + r) * C;
                const float* o = O + static_cast<std::size_t>(i0 + r) * C;
                float acc = 0.f;
                for (int d = 0; d < D; ++d) acc += a[d] * o[d];
                Dvec[r] = acc;
            }
            const float* Qi = Q + static_cast<std::size_t>(i0) * ld;
            const float* dOi = dO + static_cast<std::size_t>(i0) * C;
            for (int j0 = 0; j0 < i0 + nq; j0 += kBlock) {
                const int nk = i0 + nq - j0 < kBlock ? i0 + nq - j0 : kBlock;
                const float* Kj = K + static_cast<std::size_t>(j0) * ld;
                const float* Vj = V + static_cast<std::size_t>(j0) * ld;
                gemm(false, true, nq, nk, D, s, Qi, ld, Kj, ld, 0.f, P, kBlock);
                for (int r = 0; r < nq; ++r)
                    exp_row(P + r * kBlock, P + r * kBlock, causal_limit(i0 + r, j0, nk), nk,
                            L[i0 + r]);
                gemm(true, false, nk, D, nq, 1.f, P, kBlock, dOi, C, 1.f,
                     dV + static_cast<std::size_t>(j0) * ld, ld);
                gemm(false, true, nq, nk, D, 1.f, dOi, C, Vj, ld, 0.f, dP, kBlock);
                for (int r = 0; r < nq; ++r)
                    for (int c = 0; c < nk; ++c)
                        dP[r * kBlock + c] = P[r * kBlock + c] * (dP[r * kBlock + c] - Dvec[r]) * s;
                gemm(false, false, nq, D, nk, 1.f, dP, kBlock, Kj, ld, 1.f,
                     dQ + static_cast<std::size_t>(i0) * ld, ld);
                gemm(true, false, nk, D, nq, 1.f, dP, kBlock, Qi, ld, 1.f,
                     dK + static_cast<std::size_t>(j0) * ld, ld);
            }
        }
    }
}

}  // namespace meshlm::kernels

// Causal self-attention with grouped key/value heads, ALiBi and attention-probability dropout,
// tiled like FlashAttention-2 so memory is O(block * T) per thread and never O(T^2).
//
// Per (batch b, query head h), with Q the [T, D] slice of head h, K and V those of its key/value
// head g = h / G (G = H / Hkv query heads share one), s = scale (default 1/sqrt(D)), bias[i, j] =
// -slope[h] (i - j) (0 without ALiBi) and Z the dropout scales (Z[i, j] = keep[i, j] / (1 - rate),
// 1 without dropout):
//   forward:  S = s Q K^T + bias (causal), P = softmax(S), O = (P * Z) V, lse = logsumexp(S).
//             Key blocks are visited with an online softmax: running max m and sum l per row
//             (of the undropped P, so lse is dropout-free), O rescaled by exp(m_old - m_new)
//             whenever the max grows; Z multiplies a block's exps only after they entered l.
//   backward: P is recomputed from S and lse, Pd = P * Z; Dvec = rowsum(dO * O), which equals
//             rowsum(P * Z * dPd) because O = Pd V;
//             dV += Pd^T dO,  dPd = dO V^T,  dS = Pd * dPd - P * Dvec,
//             dQ += s dS K,  dK += s dS^T Q.
// ALiBi's bias is constant, so it only enters the recomputation of S. A learned distance bias
// (DistanceBias, T5) also gets a gradient: dbias[h, d] = sum of dS / s over (b, i, i - d), made
// per work item into its own partial row and summed after in a fixed order.
//
// Dropout draw of (global row R = row0 + b, global head n = head0 + h, query i, key j) is draw
//   X = ((R * n_head + n) * T + i) * T + j
// of the Philox stream (seed, stream) (cpu/dropout_mask.h); the backward regenerates it.
//
// Determinism: the forward gives each (query block, b, h) to one thread; a row's arithmetic does
// not depend on which. The backward gives each (b, g, chunk of query blocks) to one thread, which
// runs the G query heads of the group in order: it alone writes their dQ rows of the chunk and
// the chunk's dK, dV (or its partial sums of them), so every sum has a fixed order and needs no
// atomics.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/core/threads.h"
#include "meshlm/kernels/cpu/dropout_mask.h"
#include "meshlm/kernels/cpu/vec_math.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {
namespace {

constexpr int kBlock = 64;  // query and key block size
constexpr int kMaxHeadDim = 256;
// The partial sums take count times the memory of the layer's keys and values: bounded here.
constexpr int kMaxChunks = 8;

// Number of keys of the block starting at j0 (of nk) that query row i may attend to.
inline int causal_limit(int i, int j0, int nk) {
    int lim = i - j0 + 1;
    return lim < 0 ? 0 : (lim > nk ? nk : lim);
}

// p[c] = exp(s[c] - shift) for c < lim, 0 for lim <= c < n. Returns the sum.
inline float exp_row(float* p, const float* s, int lim, int n, float shift) {
    const float sum = cpu::sum_exp(s, lim, shift, p);
    for (int c = lim; c < n; ++c) p[c] = 0.f;
    return sum;
}

// row[c] += -slope * (i - j0 - c) for c < lim. Each term is the float product
// -(slope * float(i - j)), the same expression attention_decode uses.
inline void add_alibi(float* row, int lim, float slope, int i, int j0) {
    for (int c = 0; c < lim; ++c) row[c] += -(slope * static_cast<float>(i - (j0 + c)));
}

// row[c] += bias[i - j0 - c] for c < lim: a distance bias row (bias = DistanceBias's head row).
inline void add_distance(float* row, int lim, const float* bias, int i, int j0) {
    const float* b = bias + (i - j0);
    for (int c = 0; c < lim; ++c) row[c] += b[-c];
}

// dbias[i - j0 - c] += ds[c] * inv_s for c < lim: the distance bias's share of one score row.
inline void distance_grad(float* dbias, const float* ds, float inv_s, int lim, int i, int j0) {
    float* d = dbias + (i - j0);
    for (int c = 0; c < lim; ++c) d[-c] += ds[c] * inv_s;
}

const DistanceBias* active_distance(const DistanceBias* d, int T) {
    if (d == nullptr || d->bias == nullptr) return nullptr;
    MESHLM_CHECK(d->ld >= T, "distance bias rows of ", d->ld, " for ", T, " positions");
    return d;
}

// dS = P * (dP - Dvec) * s over one row of n keys, written over dP.
inline void score_grad(float* dp, const float* p, float dvec, float s, int n) {
    const __m256 vd = _mm256_set1_ps(dvec), vs = _mm256_set1_ps(s);
    int c = 0;
    for (; c + 8 <= n; c += 8) {
        const __m256 g = _mm256_sub_ps(_mm256_loadu_ps(dp + c), vd);
        _mm256_storeu_ps(dp + c, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(p + c), g), vs));
    }
    for (; c < n; ++c) dp[c] = p[c] * (dp[c] - dvec) * s;
}

// With dropout: dS = (Pd * dPd - P * Dvec) * s.
inline void score_grad_dropout(float* dp, const float* p, const float* pd, float dvec, float s,
                               int n) {
    const __m256 vd = _mm256_set1_ps(dvec), vs = _mm256_set1_ps(s);
    int c = 0;
    for (; c + 8 <= n; c += 8) {
        const __m256 a = _mm256_mul_ps(_mm256_loadu_ps(pd + c), _mm256_loadu_ps(dp + c));
        const __m256 b = _mm256_mul_ps(_mm256_loadu_ps(p + c), vd);
        _mm256_storeu_ps(dp + c, _mm256_mul_ps(_mm256_sub_ps(a, b), vs));
    }
    for (; c < n; ++c) dp[c] = (pd[c] * dp[c] - p[c] * dvec) * s;
}

// Where the dropout draws of (b, h) start: draw X of query i, key j is base + i * T + j.
inline std::uint64_t dropout_base(const AttnDropout& d, int b, int h, int T) {
    const std::uint64_t row = static_cast<std::uint64_t>(d.row0 + b);
    const std::uint64_t head = static_cast<std::uint64_t>(d.head0 + h);
    return (row * static_cast<std::uint64_t>(d.n_head) + head) * static_cast<std::uint64_t>(T) *
           static_cast<std::uint64_t>(T);
}

const AttnDropout* active_dropout(const AttnDropout* d, int H) {
    if (d == nullptr || d->rate == 0.f) return nullptr;
    MESHLM_CHECK(d->rate > 0.f && d->rate < 1.f, "attention dropout rate ", d->rate,
                 " outside [0, 1)");
    MESHLM_CHECK(d->head0 >= 0 && d->n_head >= d->head0 + H, "attention dropout heads ", d->head0,
                 "..", d->head0 + H, " outside the model's ", d->n_head);
    MESHLM_CHECK(d->row0 >= 0, "attention dropout row0 ", d->row0, " < 0");
    return d;
}

void check_shape(int H, int Hkv, int D) {
    MESHLM_CHECK(H >= 1 && Hkv >= 1 && H % Hkv == 0, "query heads ", H,
                 " not a multiple of key/value heads ", Hkv);
    MESHLM_CHECK(D >= 1 && D <= kMaxHeadDim, "head dim ", D, " outside 1..", kMaxHeadDim);
}

// The backward's work items: (b, key/value group g, chunk of query blocks). Chunk c covers query
// blocks [start[c], start[c + 1]), each chunk about the same number of (query, key) block pairs.
// With one chunk a (b, g) item writes its dK, dV directly; with more, each chunk writes partial
// sums that a second pass adds in chunk order. The count gives each thread at least 4 items and
// all threads as many (as far as the query blocks and kMaxChunks allow), so it depends on the
// thread count; for a given thread count the bits do not depend on the schedule. Fills start
// with the count + 1 boundaries and returns the count.
int backward_chunks(std::vector<int>& start, int groups, int nqb) {
    const int t = thread_count();
    int count = (4 * t + groups - 1) / groups;
    while (count < nqb && groups * count % t != 0) ++count;
    count = std::clamp(count, 1, std::min(nqb, kMaxChunks));
    start.assign(count + 1, nqb);  // keeps its capacity: a steady-state step allocates nothing
    start[0] = 0;
    const double pairs = 0.5 * nqb * (nqb + 1.0);  // blocks [0, i) hold i (i + 1) / 2 of them
    for (int c = 1; c < count; ++c) {
        int i = start[c - 1] + 1;
        while (i < nqb - (count - c) && 0.5 * i * (i + 1.0) < pairs * c / count) ++i;
        start[c] = i;
    }
    return count;
}

thread_local std::vector<int> t_chunk_start;
thread_local std::vector<float> t_partials;       // the chunks' dK, dV partial sums
thread_local std::vector<float> t_dist_partials;  // the items' distance-bias gradients

// grad[h, d] += the items' partial rows [B Hkv][C][G][T], summed over b, then chunks in order.
void add_distance_partials(float* grad, int ld, const float* part, int B, int Hkv, int G, int C,
                           int T) {
    for (int g = 0; g < Hkv; ++g)
        for (int r = 0; r < G; ++r) {
            float* dst = grad + static_cast<std::size_t>(g * G + r) * ld;
            for (int b = 0; b < B; ++b)
                for (int c = 0; c < C; ++c) {
                    const float* src =
                        part + ((static_cast<std::size_t>(b * Hkv + g) * C + c) * G + r) * T;
                    for (int d = 0; d < T; ++d) dst[d] += src[d];
                }
        }
}

}  // namespace

void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int H, int Hkv,
                       int D, const float* alibi_slopes, const AttnDropout* dropout, float scale,
                       const DistanceBias* distance) {
    check_shape(H, Hkv, D);
    const AttnDropout* drop = active_dropout(dropout, H);
    const DistanceBias* dist = active_distance(distance, T);
    const int G = H / Hkv, ld = (H + 2 * Hkv) * D, HD = H * D;
    const float s = scale > 0.f ? scale : 1.f / std::sqrt(static_cast<float>(D));
    const int nqb = (T + kBlock - 1) / kBlock;
    // One item per (query block, b, h), the costliest (last) query blocks first. Every row's
    // arithmetic is the same whichever thread runs it, so the dynamic schedule keeps the bits.
#pragma omp parallel for schedule(dynamic, 1)
    for (int item = 0; item < nqb * B * H; ++item) {
        const int bh = item % (B * H), b = bh / H, h = bh % H, g = h / G;
        const int i0 = (nqb - 1 - item / (B * H)) * kBlock;
        const float* row0 = qkv + static_cast<std::size_t>(b) * T * ld;
        const float* Q = row0 + h * D;
        const float* K = row0 + (H + g) * D;
        const float* V = row0 + (H + Hkv + g) * D;
        float* O = out + static_cast<std::size_t>(b) * T * HD + h * D;
        float* L = lse + static_cast<std::size_t>(bh) * T;
        const float slope = alibi_slopes ? alibi_slopes[h] : 0.f;
        const float* dbias = dist ? dist->bias + static_cast<std::size_t>(h) * dist->ld : nullptr;
        const std::uint64_t dbase = drop ? dropout_base(*drop, b, h, T) : 0;
        alignas(64) float S[kBlock * kBlock];
        alignas(64) float acc[kBlock * kMaxHeadDim];
        alignas(32) float z[kBlock];
        float m[kBlock], l[kBlock];
        const int nq = T - i0 < kBlock ? T - i0 : kBlock;
        for (int r = 0; r < nq; ++r) m[r] = -INFINITY, l[r] = 0.f;
        for (int x = 0; x < nq * D; ++x) acc[x] = 0.f;
        for (int j0 = 0; j0 < i0 + nq; j0 += kBlock) {
            const int nk = i0 + nq - j0 < kBlock ? i0 + nq - j0 : kBlock;
            gemm(false, true, nq, nk, D, s, Q + static_cast<std::size_t>(i0) * ld, ld,
                 K + static_cast<std::size_t>(j0) * ld, ld, 0.f, S, kBlock);
            for (int r = 0; r < nq; ++r) {
                float* row = S + r * kBlock;
                const int i = i0 + r, lim = causal_limit(i, j0, nk);
                if (lim == 0) {
                    for (int c = 0; c < nk; ++c) row[c] = 0.f;
                    continue;
                }
                if (alibi_slopes) add_alibi(row, lim, slope, i, j0);
                if (dbias) add_distance(row, lim, dbias, i, j0);
                const float mx = cpu::max_of(row, lim, m[r]);
                const float corr = cpu::exp_scalar(m[r] - mx);
                l[r] = l[r] * corr + exp_row(row, row, lim, nk, mx);
                m[r] = mx;
                if (drop) {
                    cpu::dropout_scales(z, drop->seed, drop->stream,
                                        dbase + static_cast<std::uint64_t>(i) * T + j0, lim,
                                        drop->rate);
                    for (int c = 0; c < lim; ++c) row[c] *= z[c];
                }
                if (corr != 1.f) {
                    float* a = acc + r * D;
                    const __m256 vc = _mm256_set1_ps(corr);
                    int d = 0;
                    for (; d + 8 <= D; d += 8)
                        _mm256_storeu_ps(a + d, _mm256_mul_ps(_mm256_loadu_ps(a + d), vc));
                    for (; d < D; ++d) a[d] *= corr;
                }
            }
            gemm(false, false, nq, D, nk, 1.f, S, kBlock, V + static_cast<std::size_t>(j0) * ld, ld,
                 1.f, acc, D);
        }
        for (int r = 0; r < nq; ++r) {
            const float inv = 1.f / l[r];
            float* o = O + static_cast<std::size_t>(i0 + r) * HD;
            for (int d = 0; d < D; ++d) o[d] = acc[r * D + d] * inv;
            L[i0 + r] = m[r] + std::log(l[r]);
        }
    }
}

void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse,
                        const float* qkv, int B, int T, int H, int Hkv, int D,
                        const float* alibi_slopes, const AttnDropout* dropout, float scale,
                        const DistanceBias* distance) {
    check_shape(H, Hkv, D);
    const AttnDropout* drop = active_dropout(dropout, H);
    const DistanceBias* dist = active_distance(distance, T);
    const int G = H / Hkv, ld = (H + 2 * Hkv) * D, HD = H * D;
    const float s = scale > 0.f ? scale : 1.f / std::sqrt(static_cast<float>(D));
    const int nqb = (T + kBlock - 1) / kBlock;
    // Bound here: inside the parallel region the thread_local names would mean each thread's own.
    const int C = backward_chunks(t_chunk_start, B * Hkv, nqb);
    const int* chunk_start = t_chunk_start.data();
    float* part = nullptr;  // [B Hkv][C][dK, dV][T][D] when C > 1
    if (C > 1) {
        const std::size_t n = static_cast<std::size_t>(B) * Hkv * C * 2 * T * D;
        if (t_partials.size() < n) t_partials.resize(n);
        part = t_partials.data();
    }
    const std::size_t plane = static_cast<std::size_t>(T) * D;
    float* dpart = nullptr;  // [B Hkv][C][G][T] when the distance bias takes a gradient
    if (dist && dist->grad) {
        const std::size_t n = static_cast<std::size_t>(B) * Hkv * C * G * T;
        t_dist_partials.assign(n, 0.f);
        dpart = t_dist_partials.data();
    }
    const float inv_s = 1.f / s;
#pragma omp parallel for schedule(dynamic, 1)
    for (int item = 0; item < B * Hkv * C; ++item) {
        const int bg = item / C, chunk = item % C, b = bg / Hkv, g = bg % Hkv;
        const std::size_t row0 = static_cast<std::size_t>(b) * T * ld;
        const float* K = qkv + row0 + (H + g) * D;
        const float* V = qkv + row0 + (H + Hkv + g) * D;
        float* dK = dqkv + row0 + (H + g) * D;
        float* dV = dqkv + row0 + (H + Hkv + g) * D;
        int ldkv = ld;
        if (C > 1) {
            dK = part + (static_cast<std::size_t>(item) * 2) * plane;
            dV = dK + plane;
            ldkv = D;
        }
        const int first_i0 = chunk_start[chunk] * kBlock;
        const int end_i0 = std::min(T, chunk_start[chunk + 1] * kBlock);
        alignas(64) float P[kBlock * kBlock];
        alignas(64) float Pd[kBlock * kBlock];
        alignas(64) float dP[kBlock * kBlock];
        alignas(32) float z[kBlock];
        float Dvec[kBlock];
        for (int h = g * G; h < (g + 1) * G; ++h) {
            const float* Q = qkv + row0 + h * D;
            float* dQ = dqkv + row0 + h * D;
            const float* dO = dout + static_cast<std::size_t>(b) * T * HD + h * D;
            const float* O = out + static_cast<std::size_t>(b) * T * HD + h * D;
            const float* L = lse + (static_cast<std::size_t>(b) * H + h) * T;
            const float slope = alibi_slopes ? alibi_slopes[h] : 0.f;
            const float* dbias =
                dist ? dist->bias + static_cast<std::size_t>(h) * dist->ld : nullptr;
            float* dgrad =
                dpart ? dpart + (static_cast<std::size_t>(item) * G + h - g * G) * T : nullptr;
            const std::uint64_t dbase = drop ? dropout_base(*drop, b, h, T) : 0;
            for (int i0 = first_i0; i0 < end_i0; i0 += kBlock) {
                const int nq = T - i0 < kBlock ? T - i0 : kBlock;
                for (int r = 0; r < nq; ++r)
                    Dvec[r] = cpu::dot(dO + static_cast<std::size_t>(i0 + r) * HD,
                                       O + static_cast<std::size_t>(i0 + r) * HD, D);
                const float* Qi = Q + static_cast<std::size_t>(i0) * ld;
                const float* dOi = dO + static_cast<std::size_t>(i0) * HD;
                for (int j0 = 0; j0 < i0 + nq; j0 += kBlock) {
                    const int nk = i0 + nq - j0 < kBlock ? i0 + nq - j0 : kBlock;
                    const float* Kj = K + static_cast<std::size_t>(j0) * ld;
                    const float* Vj = V + static_cast<std::size_t>(j0) * ld;
                    // The first product into a block overwrites it (no zeroing pass): dQ rows
                    // i0.. first at j0 = 0; dK, dV rows j0.. (all of them: nk = kBlock or the
                    // tail) first at the chunk's first query block that reaches them, for the
                    // group's first head.
                    const float beta_q = j0 == 0 ? 0.f : 1.f;
                    const float beta_kv = h == g * G && i0 == std::max(j0, first_i0) ? 0.f : 1.f;
                    gemm(false, true, nq, nk, D, s, Qi, ld, Kj, ld, 0.f, P, kBlock);
                    for (int r = 0; r < nq; ++r) {
                        float* row = P + r * kBlock;
                        const int i = i0 + r, lim = causal_limit(i, j0, nk);
                        if (alibi_slopes) add_alibi(row, lim, slope, i, j0);
                        if (dbias) add_distance(row, lim, dbias, i, j0);
                        exp_row(row, row, lim, nk, L[i]);
                        if (drop) {
                            float* rd = Pd + r * kBlock;
                            cpu::dropout_scales(z, drop->seed, drop->stream,
                                                dbase + static_cast<std::uint64_t>(i) * T + j0, lim,
                                                drop->rate);
                            for (int c = 0; c < lim; ++c) rd[c] = row[c] * z[c];
                            for (int c = lim; c < nk; ++c) rd[c] = 0.f;
                        }
                    }
                    const float* Pv = drop ? Pd : P;  // the probabilities that weighted V
                    gemm(true, false, nk, D, nq, 1.f, Pv, kBlock, dOi, HD, beta_kv,
                         dV + static_cast<std::size_t>(j0) * ldkv, ldkv);
                    gemm(false, true, nq, nk, D, 1.f, dOi, HD, Vj, ld, 0.f, dP, kBlock);
                    for (int r = 0; r < nq; ++r) {
                        const int x = r * kBlock;
                        if (drop) {
                            score_grad_dropout(dP + x, P + x, Pd + x, Dvec[r], s, nk);
                        } else {
                            score_grad(dP + x, P + x, Dvec[r], s, nk);
                        }
                        if (dgrad)
                            distance_grad(dgrad, dP + x, inv_s, causal_limit(i0 + r, j0, nk),
                                          i0 + r, j0);
                    }
                    gemm(false, false, nq, D, nk, 1.f, dP, kBlock, Kj, ld, beta_q,
                         dQ + static_cast<std::size_t>(i0) * ld, ld);
                    gemm(true, false, nk, D, nq, 1.f, dP, kBlock, Qi, ld, beta_kv,
                         dK + static_cast<std::size_t>(j0) * ldkv, ldkv);
                }
            }
        }
    }
    if (dpart) add_distance_partials(dist->grad, dist->ld, dpart, B, Hkv, G, C, T);
    // dK, dV of key block j: the partial sums of the chunks that reach it (those from j's own
    // chunk on), added in chunk order.
    if (C == 1) return;
#pragma omp parallel for schedule(static)
    for (int item = 0; item < B * Hkv * nqb; ++item) {
        const int bg = item / nqb, jb = item % nqb, b = bg / Hkv, g = bg % Hkv;
        const int j0 = jb * kBlock, nk = std::min(kBlock, T - j0);
        int c0 = 0;
        while (chunk_start[c0 + 1] <= jb) ++c0;
        for (int kv = 0; kv < 2; ++kv) {
            float* dst = dqkv + static_cast<std::size_t>(b) * T * ld + (H + kv * Hkv + g) * D;
            const float* src = part + (static_cast<std::size_t>(bg) * C * 2 + kv) * plane;
            for (int r = j0; r < j0 + nk; ++r) {
                float* d = dst + static_cast<std::size_t>(r) * ld;
                const std::size_t at = static_cast<std::size_t>(r) * D;
                const float* p = src + static_cast<std::size_t>(c0) * 2 * plane + at;
                for (int x = 0; x < D; ++x) d[x] = p[x];
                for (int c = c0 + 1; c < C; ++c) {
                    p = src + static_cast<std::size_t>(c) * 2 * plane + at;
                    for (int x = 0; x < D; ++x) d[x] += p[x];
                }
            }
        }
    }
}

}  // namespace meshlm::kernels

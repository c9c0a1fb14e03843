// Causal attention with a nonlinearity other than softmax (model.attn_act, seed 002):
//   s_ij = scale q_i.k_j - slope (i - j) (j <= i),  a = act(s)
//   sqrelu, elu:            p_ij = a_ij / t_norm
//   norm_sqrelu, norm_elu:  p_ij = a_ij / (eps + z_i),  z_i = sum_{j<=i} a_ij
//   out_i = sum_j p_ij v_j
// with sqrelu a = relu(s)^2, a' = 2 relu(s); elu a = elu(s) + 1, a' = 1 (s > 0) or e^s.
// Backward (recomputing s, a and z from qkv): dp_ij = dout_i.v_j, dv_j += p_ij dout_i;
//   da_ij = dp_ij / t_norm, or (dp_ij - sum_k dp_ik p_ik) / (eps + z_i) when normalized;
//   ds = a'(s) da;  dq_i = scale sum_j ds_ij k_j;  dk_j += scale ds_ij q_i.
// Tiled: blocks of kBlk queries against blocks of kBlk keys, each product a GEMM (single-threaded
// inside the parallel region). Without softmax's running maximum the sums need no rescaling:
// the forward adds A V and z over the key blocks and divides once. The backward keeps one query
// block's scores and probabilities for the whole row (2 kBlk T floats a thread); normalized
// variants need c_i = sum_j dp_ij p_ij = dout_i . out_i, from the block's recomputed output.
// One thread per (batch row, key/value head) in the backward: the query heads sharing a
// key/value head add into its dk and dv in a fixed order, so the result is deterministic for any
// thread count.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/kernels/cpu/attn_act_math.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {
namespace {

using cpu::attn_act_grad;
using cpu::attn_act_value;
using cpu::attn_normalized;
using cpu::attn_sqrelu;

constexpr int kBlk = 64;

// Per-thread scratch, grown to the largest shape seen and then kept: a step allocates nothing.
thread_local std::vector<float> t_s, t_p, t_dp, t_o, t_z, t_inv, t_c;
float* scratch(std::vector<float>& v, std::size_t n) {
    if (v.size() < n) v.resize(n);
    return v.data();
}

struct Geometry {
    int T, H, Hkv, D, W;  // W: row width of qkv
    std::size_t row(int b, int i) const { return (static_cast<std::size_t>(b) * T + i) * W; }
    std::size_t q_col(int h) const { return static_cast<std::size_t>(h) * D; }
    std::size_t k_col(int g) const { return static_cast<std::size_t>(H + g) * D; }
    std::size_t v_col(int g) const { return static_cast<std::size_t>(H + Hkv + g) * D; }
};

// Scores of queries [i0, i0 + m) of head h against keys [j0, j0 + n) of group kv into s (row
// stride lds), and a = act(s) into a; a = 0 where j > i. Adds each row's sum of a into z.
void block_scores(const Geometry& g, const float* qkv, int b, int h, int kv, int i0, int m, int j0,
                  int n, float scale, float slope, bool sq, float* s, float* a, int lds, float* z) {
    gemm(false, true, m, n, g.D, scale, qkv + g.row(b, i0) + g.q_col(h), g.W,
         qkv + g.row(b, j0) + g.k_col(kv), g.W, 0.f, s, lds);
    for (int r = 0; r < m; ++r) {
        const int i = i0 + r;
        float* sr = s + static_cast<std::size_t>(r) * lds;
        float* ar = a + static_cast<std::size_t>(r) * lds;
        float sum = 0.f;
        for (int c = 0; c < n; ++c) {
            const int j = j0 + c;
            if (j > i) {
                ar[c] = 0.f;
                continue;
            }
            sr[c] -= slope * static_cast<float>(i - j);
            ar[c] = attn_act_value(sq, sr[c]);
            sum += ar[c];
        }
        z[r] += sum;
    }
}

}  // namespace

void attention_act_forward(float* out, const float* qkv, int B, int T, int H, int Hkv, int D,
                           const float* alibi_slopes, const AttnActParams& act, float scale) {
    MESHLM_CHECK(act.act != AttnAct::softmax, "attention_act_forward: softmax has its own kernel");
    MESHLM_CHECK(H % Hkv == 0, "query heads ", H, " not a multiple of key/value heads ", Hkv);
    if (scale <= 0.f) scale = 1.f / std::sqrt(static_cast<float>(D));
    const Geometry g{T, H, Hkv, D, (H + 2 * Hkv) * D};
    const int G = H / Hkv, blocks = (T + kBlk - 1) / kBlk;
    const bool sq = attn_sqrelu(act.act), norm = attn_normalized(act.act);
#pragma omp parallel
    {
        float* s = scratch(t_s, kBlk * kBlk);
        float* a = scratch(t_p, kBlk * kBlk);
        float* o = scratch(t_o, static_cast<std::size_t>(kBlk) * D);
        float* z = scratch(t_z, kBlk);
#pragma omp for schedule(dynamic, 1) collapse(3)
        for (int b = 0; b < B; ++b)
            for (int h = 0; h < H; ++h)
                for (int qb = 0; qb < blocks; ++qb) {
                    const int kv = h / G, i0 = qb * kBlk, m = std::min(kBlk, T - i0);
                    const float slope = alibi_slopes ? alibi_slopes[h] : 0.f;
                    std::fill_n(z, kBlk, 0.f);
                    for (int j0 = 0; j0 < i0 + m; j0 += kBlk) {
                        const int n = std::min(kBlk, T - j0);
                        block_scores(g, qkv, b, h, kv, i0, m, j0, n, scale, slope, sq, s, a, kBlk,
                                     z);
                        gemm(false, false, m, D, n, 1.f, a, kBlk, qkv + g.row(b, j0) + g.v_col(kv),
                             g.W, j0 == 0 ? 0.f : 1.f, o, D);
                    }
                    for (int r = 0; r < m; ++r) {
                        const float inv = 1.f / (norm ? act.eps + z[r] : act.t_norm);
                        float* dst = out + (static_cast<std::size_t>(b) * T + i0 + r) * H * D +
                                     static_cast<std::size_t>(h) * D;
                        for (int d = 0; d < D; ++d)
                            dst[d] = o[static_cast<std::size_t>(r) * D + d] * inv;
                    }
                }
    }
}

void attention_act_backward(float* dqkv, const float* dout, const float* qkv, int B, int T, int H,
                            int Hkv, int D, const float* alibi_slopes, const AttnActParams& act,
                            float scale) {
    MESHLM_CHECK(act.act != AttnAct::softmax, "attention_act_backward: softmax has its own kernel");
    if (scale <= 0.f) scale = 1.f / std::sqrt(static_cast<float>(D));
    const Geometry g{T, H, Hkv, D, (H + 2 * Hkv) * D};
    const int G = H / Hkv, blocks = (T + kBlk - 1) / kBlk;
    const bool sq = attn_sqrelu(act.act), norm = attn_normalized(act.act);
    const std::size_t ldo = static_cast<std::size_t>(H) * D;  // row stride of out / dout
#pragma omp parallel
    {
        // One query block's scores and probabilities against every key: kBlk x T each.
        float* s = scratch(t_s, static_cast<std::size_t>(kBlk) * T);
        float* p = scratch(t_p, static_cast<std::size_t>(kBlk) * T);
        float* dp = scratch(t_dp, kBlk * kBlk);
        float* o = scratch(t_o, static_cast<std::size_t>(kBlk) * D);
        float* z = scratch(t_z, kBlk);
        float* inv = scratch(t_inv, kBlk);
        float* c = scratch(t_c, kBlk);
#pragma omp for schedule(static) collapse(2)
        for (int b = 0; b < B; ++b)
            for (int kv = 0; kv < Hkv; ++kv) {
                for (int j = 0; j < T; ++j) {  // this group's dk, dv accumulate below
                    float* row = dqkv + g.row(b, j);
                    std::memset(row + g.k_col(kv), 0, D * sizeof(float));
                    std::memset(row + g.v_col(kv), 0, D * sizeof(float));
                }
                for (int h = kv * G; h < (kv + 1) * G; ++h) {
                    const float slope = alibi_slopes ? alibi_slopes[h] : 0.f;
                    for (int qb = 0; qb < blocks; ++qb) {
                        const int i0 = qb * kBlk, m = std::min(kBlk, T - i0), keys = i0 + m;
                        std::fill_n(z, kBlk, 0.f);
                        for (int j0 = 0; j0 < keys; j0 += kBlk)
                            block_scores(g, qkv, b, h, kv, i0, m, j0, std::min(kBlk, T - j0), scale,
                                         slope, sq, s + j0, p + j0, T, z);
                        for (int r = 0; r < m; ++r) {
                            inv[r] = 1.f / (norm ? act.eps + z[r] : act.t_norm);
                            float* pr = p + static_cast<std::size_t>(r) * T;
                            for (int j = 0; j < keys; ++j) pr[j] *= inv[r];
                        }
                        const float* go = dout + (static_cast<std::size_t>(b) * T + i0) * ldo +
                                          static_cast<std::size_t>(h) * D;
                        if (norm) {  // c_i = dout_i . out_i, out = P V
                            gemm(false, false, m, D, keys, 1.f, p, T,
                                 qkv + g.row(b, 0) + g.v_col(kv), g.W, 0.f, o, D);
                            for (int r = 0; r < m; ++r) {
                                float acc = 0.f;
                                for (int d = 0; d < D; ++d)
                                    acc += go[static_cast<std::size_t>(r) * ldo + d] *
                                           o[static_cast<std::size_t>(r) * D + d];
                                c[r] = acc;
                            }
                        }
                        float* dq = dqkv + g.row(b, i0) + g.q_col(h);
                        for (int r = 0; r < m; ++r)
                            std::memset(dq + static_cast<std::size_t>(r) * g.W, 0,
                                        D * sizeof(float));
                        for (int j0 = 0; j0 < keys; j0 += kBlk) {
                            const int n = std::min(kBlk, T - j0);
                            const float* vj = qkv + g.row(b, j0) + g.v_col(kv);
                            // dv_j += P^T dout
                            gemm(true, false, n, D, m, 1.f, p + j0, T, go, static_cast<int>(ldo),
                                 1.f, dqkv + g.row(b, j0) + g.v_col(kv), g.W);
                            // dp = dout V^T, then ds = scale a'(s) da in place
                            gemm(false, true, m, n, D, 1.f, go, static_cast<int>(ldo), vj, g.W, 0.f,
                                 dp, kBlk);
                            for (int r = 0; r < m; ++r) {
                                const int i = i0 + r;
                                const float* sr = s + static_cast<std::size_t>(r) * T + j0;
                                float* dr = dp + static_cast<std::size_t>(r) * kBlk;
                                for (int cc = 0; cc < n; ++cc) {
                                    if (j0 + cc > i) {
                                        dr[cc] = 0.f;
                                        continue;
                                    }
                                    const float da =
                                        norm ? (dr[cc] - c[r]) * inv[r] : dr[cc] * inv[r];
                                    dr[cc] = scale * attn_act_grad(sq, sr[cc]) * da;
                                }
                            }
                            // dq += ds K;  dk_j += ds^T q
                            gemm(false, false, m, D, n, 1.f, dp, kBlk,
                                 qkv + g.row(b, j0) + g.k_col(kv), g.W, 1.f, dq, g.W);
                            gemm(true, false, n, D, m, 1.f, dp, kBlk,
                                 qkv + g.row(b, i0) + g.q_col(h), g.W, 1.f,
                                 dqkv + g.row(b, j0) + g.k_col(kv), g.W);
                        }
                    }
                }
            }
    }
}

}  // namespace meshlm::kernels

// Causal attention with a nonlinearity other than softmax (model.attn_act, seed 002):
//   s_ij = scale q_i.k_j - slope (i - j) (j <= i),  a = act(s)
//   sqrelu, elu:            p_ij = a_ij / t_norm
//   norm_sqrelu, norm_elu:  p_ij = a_ij / (eps + z_i),  z_i = sum_{j<=i} a_ij
//   out_i = sum_j p_ij v_j
// with sqrelu a = relu(s)^2, a' = 2 relu(s); elu a = elu(s) + 1, a' = 1 (s > 0) or e^s.
// Backward (recomputing s, a and z from qkv): dp_ij = dout_i.v_j, dv_j += p_ij dout_i;
//   da_ij = dp_ij / t_norm, or (dp_ij - sum_k dp_ik p_ik) / (eps + z_i) when normalized;
//   ds = a'(s) da;  dq_i = scale sum_j ds_ij k_j;  dk_j += scale ds_ij q_i.
// One thread per (batch row, key/value head): the query heads sharing a key/value head add
// into its dk and dv in a fixed order, so the result is deterministic for any thread count.
// Memory: one row of T scores per thread.
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

float dot(const float* a, const float* b, int D) {
    float s = 0.f;
#pragma omp simd reduction(+ : s)
    for (int d = 0; d < D; ++d) s += a[d] * b[d];
    return s;
}

struct Geometry {
    int T, H, Hkv, D, W;  // W: row width of qkv
    const float* q(const float* qkv, int b, int i, int h) const {
        return qkv + (static_cast<std::size_t>(b) * T + i) * W + static_cast<std::size_t>(h) * D;
    }
    std::size_t k_col(int g) const { return static_cast<std::size_t>(H + g) * D; }
    std::size_t v_col(int g) const { return static_cast<std::size_t>(H + Hkv + g) * D; }
};

// Row i of head h: a_j into a[0..i], returns the divisor of p (t_norm, or eps + z).
float row_scores(const Geometry& g, const float* qkv, int b, int i, int h, int kv, float scale,
                 float slope, const AttnActParams& act, float* s, float* a) {
    const float* qi = g.q(qkv, b, i, h);
    const bool sq = attn_sqrelu(act.act);
    float z = 0.f;
    for (int j = 0; j <= i; ++j) {
        const float* kj = qkv + (static_cast<std::size_t>(b) * g.T + j) * g.W + g.k_col(kv);
        s[j] = scale * dot(qi, kj, g.D) - slope * static_cast<float>(i - j);
        a[j] = attn_act_value(sq, s[j]);
        z += a[j];
    }
    return attn_normalized(act.act) ? act.eps + z : act.t_norm;
}

}  // namespace

void attention_act_forward(float* out, const float* qkv, int B, int T, int H, int Hkv, int D,
                           const float* alibi_slopes, const AttnActParams& act, float scale) {
    MESHLM_CHECK(act.act != AttnAct::softmax, "attention_act_forward: softmax has its own kernel");
    MESHLM_CHECK(H % Hkv == 0, "query heads ", H, " not a multiple of key/value heads ", Hkv);
    if (scale <= 0.f) scale = 1.f / std::sqrt(static_cast<float>(D));
    const Geometry g{T, H, Hkv, D, (H + 2 * Hkv) * D};
    const int G = H / Hkv;
#pragma omp parallel
    {
        std::vector<float> s(T), a(T);
#pragma omp for schedule(static) collapse(2)
        for (int b = 0; b < B; ++b)
            for (int h = 0; h < H; ++h) {
                const int kv = h / G;
                const float slope = alibi_slopes ? alibi_slopes[h] : 0.f;
                for (int i = 0; i < T; ++i) {
                    const float div =
                        row_scores(g, qkv, b, i, h, kv, scale, slope, act, s.data(), a.data());
                    float* o = out + (static_cast<std::size_t>(b) * T + i) * H * D +
                               static_cast<std::size_t>(h) * D;
                    std::memset(o, 0, D * sizeof(float));
                    for (int j = 0; j <= i; ++j) {
                        const float p = a[j] / div;
                        const float* vj =
                            qkv + (static_cast<std::size_t>(b) * T + j) * g.W + g.v_col(kv);
#pragma omp simd
                        for (int d = 0; d < D; ++d) o[d] += p * vj[d];
                    }
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
    const int G = H / Hkv;
    const bool sq = attn_sqrelu(act.act), norm = attn_normalized(act.act);
#pragma omp parallel
    {
        std::vector<float> s(T), a(T), dp(T);
#pragma omp for schedule(static) collapse(2)
        for (int b = 0; b < B; ++b)
            for (int kv = 0; kv < Hkv; ++kv) {
                for (int j = 0; j < T; ++j) {  // this group's dk, dv accumulate below
                    float* row = dqkv + (static_cast<std::size_t>(b) * T + j) * g.W;
                    std::memset(row + g.k_col(kv), 0, D * sizeof(float));
                    std::memset(row + g.v_col(kv), 0, D * sizeof(float));
                }
                for (int h = kv * G; h < (kv + 1) * G; ++h) {
                    const float slope = alibi_slopes ? alibi_slopes[h] : 0.f;
                    for (int i = 0; i < T; ++i) {
                        const float div =
                            row_scores(g, qkv, b, i, h, kv, scale, slope, act, s.data(), a.data());
                        const float* go = dout + (static_cast<std::size_t>(b) * T + i) * H * D +
                                          static_cast<std::size_t>(h) * D;
                        const float* qi = g.q(qkv, b, i, h);
                        float c = 0.f;  // sum_j dp_j p_j (normalized only)
                        for (int j = 0; j <= i; ++j) {
                            const std::size_t rj = (static_cast<std::size_t>(b) * T + j) * g.W;
                            dp[j] = dot(go, qkv + rj + g.v_col(kv), D);
                            const float p = a[j] / div;
                            c += dp[j] * p;
                            float* dv = dqkv + rj + g.v_col(kv);
#pragma omp simd
                            for (int d = 0; d < D; ++d) dv[d] += p * go[d];
                        }
                        float* dq = dqkv + (static_cast<std::size_t>(b) * T + i) * g.W +
                                    static_cast<std::size_t>(h) * D;
                        std::memset(dq, 0, D * sizeof(float));
                        for (int j = 0; j <= i; ++j) {
                            const float da = norm ? (dp[j] - c) / div : dp[j] / div;
                            const float ds = scale * attn_act_grad(sq, s[j]) * da;
                            const std::size_t rj = (static_cast<std::size_t>(b) * T + j) * g.W;
                            const float* kj = qkv + rj + g.k_col(kv);
                            float* dk = dqkv + rj + g.k_col(kv);
#pragma omp simd
                            for (int d = 0; d < D; ++d) {
                                dq[d] += ds * kj[d];
                                dk[d] += ds * qi[d];
                            }
                        }
                    }
                }
            }
    }
}

}  // namespace meshlm::kernels

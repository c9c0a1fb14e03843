// Single-query attention over a KV cache, for decoding one new position per sequence.
// Per (row m, query head h), with q the row's query, K, V the sequence's cached [T, D] keys and
// values of key/value head h / (H / Hkv) and s = 1/sqrt(D):
//   out = softmax(s q K^T + bias) V,  bias_j = -slope[h] (T - 1 - j)  (0 without ALiBi), or
//   the learned distance bias dist[h, T - 1 - j] (DistanceBias)
// (the query sits at position T - 1; every cached position is in the past, so no mask).
// Keys are visited in blocks with an online softmax (running max and sum, the partial output
// rescaled when the max grows): stack memory only, any T.
#include <algorithm>
#include <cmath>

#include "meshlm/core/error.h"
#include "meshlm/kernels/cpu/attn_act_math.h"
#include "meshlm/kernels/cpu/vec_math.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {
namespace {

constexpr int kBlock = 256;  // keys per block
constexpr int kMaxHeadDim = 256;

// One (row, head): q against positions 0..T-1, K(j) and V(j) giving position j's key and value.
template <typename KeyAt, typename ValueAt>
inline void attend_one(float* o, const float* qh, int T, int D, float scale, float slope,
                       bool alibi, const float* dbias, int dlast, KeyAt key_at, ValueAt value_at) {
    alignas(32) float p[kBlock];
    alignas(32) float acc[kMaxHeadDim] = {};
    float mx = -INFINITY, l = 0.f;
    for (int t0 = 0; t0 < T; t0 += kBlock) {
        const int n = T - t0 < kBlock ? T - t0 : kBlock;
        float bm = -INFINITY;
        for (int j = 0; j < n; ++j) {
            p[j] = scale * cpu::dot(qh, key_at(t0 + j), D);
            // The same float bias term as attention_forward's -(slope * float(i - j)).
            if (alibi) p[j] += -(slope * static_cast<float>(T - 1 - (t0 + j)));
            if (dbias) p[j] += dbias[std::min(T - 1 - (t0 + j), dlast)];  // forward's order
            bm = p[j] > bm ? p[j] : bm;
        }
        const float mnew = bm > mx ? bm : mx;
        const float corr = cpu::exp_scalar(mx - mnew);  // 0 on the first block
        l = l * corr + cpu::sum_exp(p, n, mnew, p);
        mx = mnew;
        for (int d = 0; d < D; ++d) acc[d] *= corr;
        for (int j = 0; j < n; ++j) {
            const float* v = value_at(t0 + j);
            const float pj = p[j];
#pragma omp simd
            for (int d = 0; d < D; ++d) acc[d] += pj * v[d];
        }
    }
    const float inv = 1.f / l;
    for (int d = 0; d < D; ++d) o[d] = acc[d] * inv;
}

// The same with a nonlinearity other than softmax (attention_act_forward's row T - 1).
template <typename KeyAt, typename ValueAt>
inline void attend_one_act(float* o, const float* qh, int T, int D, float scale, float slope,
                           const AttnActParams& act, KeyAt key_at, ValueAt value_at) {
    alignas(32) float acc[kMaxHeadDim] = {};
    const bool sq = cpu::attn_sqrelu(act.act), norm = cpu::attn_normalized(act.act);
    float z = 0.f;
    for (int j = 0; j < T; ++j) {
        const float s = scale * cpu::dot(qh, key_at(j), D) - slope * static_cast<float>(T - 1 - j);
        const float a = cpu::attn_act_value(sq, s);
        z += a;
        const float* v = value_at(j);
#pragma omp simd
        for (int d = 0; d < D; ++d) acc[d] += a * v[d];
    }
    const float div = norm ? act.eps + z : act.t_norm;
    for (int d = 0; d < D; ++d) o[d] = acc[d] / div;
}

// Head h's distance bias row (null without one).
const float* distance_row(const DistanceBias* dist, int h) {
    if (dist == nullptr || dist->bias == nullptr) return nullptr;
    return dist->bias + static_cast<std::size_t>(h) * dist->ld;
}

void check_heads(int H, int Hkv, int D) {
    MESHLM_CHECK(H >= 1 && Hkv >= 1 && H % Hkv == 0, "query heads ", H,
                 " not a multiple of key/value heads ", Hkv);
    MESHLM_CHECK(D >= 1 && D <= kMaxHeadDim, "head dim ", D, " outside 1..", kMaxHeadDim);
}

}  // namespace

void attention_decode(float* out, const float* q, int ldq, const float* k_cache,
                      const float* v_cache, const std::int32_t* seq, int M, int T, int Tmax, int H,
                      int Hkv, int D, const float* alibi_slopes, float score_scale,
                      const AttnActParams* act, const DistanceBias* dist) {
    const float scale = score_scale > 0.f ? score_scale : 1.f / std::sqrt(static_cast<float>(D));
    check_heads(H, Hkv, D);
    const int G = H / Hkv;
    MESHLM_CHECK(T >= 1 && T <= Tmax, "attending to ", T, " positions of a ", Tmax, " cache");
    if (act && act->act == AttnAct::softmax) act = nullptr;
    MESHLM_CHECK(!act || !dist || !dist->bias, "a distance bias needs softmax attention");
#pragma omp parallel for schedule(static)
    for (int mh = 0; mh < M * H; ++mh) {
        const int m = mh / H, h = mh % H;
        const int s = seq ? seq[m] : m;
        const float* qh = q + static_cast<std::size_t>(m) * ldq + h * D;
        const std::size_t base = (static_cast<std::size_t>(s) * Hkv + h / G) * Tmax * D;
        const float* K = k_cache + base;
        const float* V = v_cache + base;
        if (act) {
            attend_one_act(
                out + static_cast<std::size_t>(m) * H * D + h * D, qh, T, D, scale,
                alibi_slopes ? alibi_slopes[h] : 0.f, *act,
                [&](int j) { return K + static_cast<std::size_t>(j) * D; },
                [&](int j) { return V + static_cast<std::size_t>(j) * D; });
            continue;
        }
        attend_one(
            out + static_cast<std::size_t>(m) * H * D + h * D, qh, T, D, scale,
            alibi_slopes ? alibi_slopes[h] : 0.f, alibi_slopes != nullptr, distance_row(dist, h),
            dist ? dist->ld - 1 : 0, [&](int j) { return K + static_cast<std::size_t>(j) * D; },
            [&](int j) { return V + static_cast<std::size_t>(j) * D; });
    }
}

void attention_paged(float* out, const float* q, int ldq, const float* k_pool, const float* v_pool,
                     const std::int32_t* const* tables, const std::int32_t* lens, int M, int block,
                     int H, int Hkv, int D, const float* alibi_slopes, float score_scale,
                     const AttnActParams* act, const DistanceBias* dist) {
    const float scale = score_scale > 0.f ? score_scale : 1.f / std::sqrt(static_cast<float>(D));
    check_heads(H, Hkv, D);
    const int G = H / Hkv;
    for (int m = 0; m < M; ++m) MESHLM_CHECK(lens[m] >= 1, "row ", m, " attends to nothing");
    if (act && act->act == AttnAct::softmax) act = nullptr;
    MESHLM_CHECK(!act || !dist || !dist->bias, "a distance bias needs softmax attention");
    const std::size_t head_stride = static_cast<std::size_t>(block) * D;
    const std::size_t block_stride = head_stride * Hkv;
    // Rows differ in length: dynamic scheduling evens out the threads' work. Each (row, head)
    // is computed by one thread in the same order whatever the schedule.
#pragma omp parallel for schedule(dynamic, 1)
    for (int mh = 0; mh < M * H; ++mh) {
        const int m = mh / H, h = mh % H;
        const std::int32_t* table = tables[m];
        const std::size_t head = (h / G) * head_stride;
        auto at = [&](const float* pool, int j) {
            return pool + table[j / block] * block_stride + head +
                   static_cast<std::size_t>(j % block) * D;
        };
        if (act) {
            attend_one_act(
                out + static_cast<std::size_t>(m) * H * D + h * D,
                q + static_cast<std::size_t>(m) * ldq + h * D, lens[m], D, scale,
                alibi_slopes ? alibi_slopes[h] : 0.f, *act, [&](int j) { return at(k_pool, j); },
                [&](int j) { return at(v_pool, j); });
            continue;
        }
        attend_one(
            out + static_cast<std::size_t>(m) * H * D + h * D,
            q + static_cast<std::size_t>(m) * ldq + h * D, lens[m], D, scale,
            alibi_slopes ? alibi_slopes[h] : 0.f, alibi_slopes != nullptr, distance_row(dist, h),
            dist ? dist->ld - 1 : 0, [&](int j) { return at(k_pool, j); },
            [&](int j) { return at(v_pool, j); });
    }
}

}  // namespace meshlm::kernels

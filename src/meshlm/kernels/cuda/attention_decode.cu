// Single-query attention over a KV cache on the GPU, kernels.h's attention_decode and
// attention_paged (cpu/attention_decode.cpp has the math). Per (row m, query head h), with the
// query at position T - 1 of its sequence and every cached position in its past:
//   softmax: out = softmax(scale q K^T - slope (T - 1 - j) + dist[h, T - 1 - j]) V
//            (online over key tiles; the distance bias's last entry serves every farther key)
//   act:     out = sum_j a(s_j) V_j / (t_norm, or eps + sum_j a(s_j) for norm_*)
// One block per (row, head). Per tile of kTile keys: each warp scores keys j = warp, warp +
// kWarps, ... (lanes split the head dim, a shuffle tree sums); the block's max and sum are fixed
// trees; thread d accumulates output dim d (and d + kThreads) over the tile's keys in key order.
// No atomics, so every run gives the same bits.
#include <cmath>

#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 128, kWarps = kThreads / 32, kTile = kThreads;
constexpr int kDims = kMaxAttentionHeadDim / kThreads;  // output dims per thread
static_assert(kMaxAttentionHeadDim % kThreads == 0);

// [S, Hkv, Tmax, D] caches, row m reading sequence seq[m] (null: m), T positions.
struct CacheRows {
    const int32_t* seq;
    int T, Tmax, Hkv, D;
    __device__ int length(int) const { return T; }
    __device__ std::size_t at(int m, int hk, int j) const {
        const std::size_t s = seq ? seq[m] : m;
        return ((s * Hkv + hk) * Tmax + j) * static_cast<std::size_t>(D);
    }
};

// [num_blocks, Hkv, block, D] pools; row m's position j at offset j % block of block
// tables[m * table_stride + j / block]; lens[m] positions.
struct PagedRows {
    const int32_t *tables, *lens;
    int table_stride, block, Hkv, D;
    __device__ int length(int m) const { return lens[m]; }
    __device__ std::size_t at(int m, int hk, int j) const {
        const std::size_t b = tables[static_cast<std::size_t>(m) * table_stride + j / block];
        return ((b * Hkv + hk) * block + j % block) * static_cast<std::size_t>(D);
    }
};

struct Decode {
    float* out;
    const float *q, *k, *v, *alibi;
    int ldq, H, G, D;  // G = H / Hkv
    float scale;
    AttnActParams act;
    DistanceBias dist;  // bias null: none
};

// The scores of keys t0 .. t0 + n - 1 into s[]: the CPU's float expressions, per path.
template <typename Rows>
__device__ void score_tile(float* s, const float* qs, const Decode& a, const Rows& rows, int m,
                           int hk, int T, int t0, int n, float slope, const float* drow) {
    const int lane = threadIdx.x % 32;
    for (int j = threadIdx.x / 32; j < n; j += kWarps) {
        const float* key = a.k + rows.at(m, hk, t0 + j);
        float dot = 0.f;
        for (int d = lane; d < a.D; d += 32) dot += qs[d] * key[d];
        dot = warp_reduce(dot, SumOp{});
        const float dist = static_cast<float>(T - 1 - (t0 + j));
        if (lane != 0) continue;
        if (a.act.act != AttnAct::softmax) {
            s[j] = a.scale * dot - slope * dist;
            continue;
        }
        float sj = a.alibi ? a.scale * dot + -(slope * dist) : a.scale * dot;
        if (drow) sj += drow[min(T - 1 - (t0 + j), a.dist.ld - 1)];  // after ALiBi, as the CPU
        s[j] = sj;
    }
}

// a(s) of attn_act_math.h: relu(s)^2 or elu(s) + 1.
__device__ float act_value(bool sqrelu, float s) {
    if (sqrelu) return s > 0.f ? s * s : 0.f;
    return s > 0.f ? s + 1.f : expf(s);
}

template <typename Rows>
__global__ void __launch_bounds__(kThreads) decode_kernel(Decode a, Rows rows) {
    __shared__ float qs[kMaxAttentionHeadDim], p[kTile];
    const int m = blockIdx.x / a.H, h = blockIdx.x % a.H, hk = h / a.G, tid = threadIdx.x;
    const int T = rows.length(m);
    const float slope = a.alibi ? a.alibi[h] : 0.f;
    const float* drow =
        a.dist.bias ? a.dist.bias + static_cast<std::size_t>(h) * a.dist.ld : nullptr;
    const bool softmax = a.act.act == AttnAct::softmax;
    const bool sq = a.act.act == AttnAct::sqrelu || a.act.act == AttnAct::norm_sqrelu;
    for (int d = tid; d < a.D; d += kThreads)
        qs[d] = a.q[static_cast<std::size_t>(m) * a.ldq + h * a.D + d];
    float acc[kDims] = {};
    float mx = -INFINITY, l = 0.f;  // softmax: running max and sum; act: l sums a(s)
    __syncthreads();
    for (int t0 = 0; t0 < T; t0 += kTile) {
        const int n = min(kTile, T - t0);
        score_tile(p, qs, a, rows, m, hk, T, t0, n, slope, drow);
        __syncthreads();
        float e = 0.f, corr = 1.f;
        if (softmax) {
            const float mnew = fmaxf(mx, block_max(tid < n ? p[tid] : -INFINITY));
            corr = expf(mx - mnew);  // 0 on the first tile
            e = tid < n ? expf(p[tid] - mnew) : 0.f;
            mx = mnew;
        } else {
            e = tid < n ? act_value(sq, p[tid]) : 0.f;
        }
        l = l * corr + block_sum(e);  // block_sum's barriers: every p[] read is done
        if (tid < n) p[tid] = e;
        __syncthreads();
        for (int k = 0; k < kDims; ++k) {
            const int d = tid + k * kThreads;
            if (d >= a.D) break;
            float o = acc[k] * corr;
            for (int j = 0; j < n; ++j) o += p[j] * a.v[rows.at(m, hk, t0 + j) + d];
            acc[k] = o;
        }
        __syncthreads();  // p[] is rewritten by the next tile
    }
    const bool norm = a.act.act == AttnAct::norm_sqrelu || a.act.act == AttnAct::norm_elu;
    float* o = a.out + static_cast<std::size_t>(m) * a.H * a.D + h * a.D;
    for (int k = 0; k < kDims; ++k) {
        const int d = tid + k * kThreads;
        if (d >= a.D) break;
        if (T < 1)
            o[d] = 0.f;  // nothing to attend to (the CPU refuses such a row)
        else if (softmax)
            o[d] = acc[k] * (1.f / l);
        else
            o[d] = acc[k] / (norm ? a.act.eps + l : a.act.t_norm);
    }
}

Decode make_decode(float* out, const float* q, int ldq, const float* k, const float* v, int H,
                   int Hkv, int D, const float* alibi, float scale, const AttnActParams* act,
                   const DistanceBias* dist) {
    const bool biased = dist && dist->bias;
    MESHLM_CHECK(!biased || !act || act->act == AttnAct::softmax,
                 "a distance bias needs softmax attention");
    MESHLM_CHECK(!biased || dist->ld >= 1, "distance bias rows of ", dist ? dist->ld : 0);
    return Decode{out,
                  q,
                  k,
                  v,
                  alibi,
                  ldq,
                  H,
                  H / Hkv,
                  D,
                  scale > 0.f ? scale : 1.f / sqrtf(static_cast<float>(D)),
                  act ? *act : AttnActParams{},
                  biased ? *dist : DistanceBias{}};
}

}  // namespace

void attention_decode(float* out, const float* q, int ldq, const float* k_cache,
                      const float* v_cache, const int32_t* seq, int M, int T, int Tmax, int H,
                      int Hkv, int D, const float* alibi_slopes, float scale,
                      const AttnActParams* act, const DistanceBias* dist) {
    if (M == 0 || H == 0) return;
    const Decode a =
        make_decode(out, q, ldq, k_cache, v_cache, H, Hkv, D, alibi_slopes, scale, act, dist);
    decode_kernel<CacheRows><<<M * H, kThreads>>>(a, CacheRows{seq, T, Tmax, Hkv, D});
    MESHLM_CUDA_LAUNCHED();
}

void attention_paged(float* out, const float* q, int ldq, const float* k_pool, const float* v_pool,
                     const int32_t* tables, int table_stride, const int32_t* lens, int M, int block,
                     int H, int Hkv, int D, const float* alibi_slopes, float scale,
                     const AttnActParams* act, const DistanceBias* dist) {
    if (M == 0 || H == 0) return;
    const Decode a =
        make_decode(out, q, ldq, k_pool, v_pool, H, Hkv, D, alibi_slopes, scale, act, dist);
    const PagedRows rows{tables, lens, table_stride, block, Hkv, D};
    decode_kernel<PagedRows><<<M * H, kThreads>>>(a, rows);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

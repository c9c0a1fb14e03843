// Causal attention forward on the GPU, flash-style (kernels.h's contract):
//   S = scale Q K^T + bias (causal), P = softmax(S), O = (P * Z) V, lse = logsumexp(S) per row,
// Z the dropout's keep-scales (1 without dropout): they weight V after P entered the row's sum,
// so lse stays dropout-free, as on the CPU.
// One warp per query row (attention_common.cuh); key/value tiles of 32 rows stream through
// shared memory, shared by the block's 8 query rows. Lane j scores key j0 + j; the row keeps an
// online softmax (running max m and sum l, O rescaled by exp(m_old - m_new) when m grows), so
// memory is O(D) per row and no T x T matrix exists. lse = m + log l is saved for the backward.
// Head dims of at most 64 that are a multiple of 4 take the register-tiled kernel instead
// (attention_tiled_forward.cu), several times faster; this one keeps the rest.
#include "meshlm/kernels/cuda/attention_common.cuh"
#include "meshlm/kernels/cuda/attention_tiles.cuh"
#include "meshlm/kernels/cuda/cuda_kernels.h"

namespace meshlm::kernels::cuda {

namespace {

template <int kChunks>
__global__ void __launch_bounds__(kRows * 32)
    attention_forward_kernel(float* out, float* lse, const float* qkv, AttnGeom g) {
    extern __shared__ float smem[];
    const int D = g.D, ldk = D + 1;
    float* Ks = smem;              // [kTile][D + 1]
    float* Vs = Ks + kTile * ldk;  // [kTile][D]
    float* Qs = Vs + kTile * D;    // [kRows][D]
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int b = blockIdx.y / g.H, h = blockIdx.y % g.H, kvh = h / g.group;
    const int row0 = blockIdx.x * kRows, i = row0 + warp;
    const bool active = i < g.T;  // uniform over the warp
    const int last = min(g.T - 1, row0 + kRows - 1);
    float* q = Qs + warp * D;
    if (active)
        for (int d = lane; d < D; d += 32) q[d] = g.q(qkv, b, i, h)[d];

    float acc[kChunks];
#pragma unroll
    for (int r = 0; r < kChunks; ++r) acc[r] = 0.f;
    float m = -INFINITY, l = 0.f;
    for (int j0 = 0; j0 <= last; j0 += kTile) {
        __syncthreads();  // the previous tile is used up (and q is written)
        load_kv_tile(Ks, ldk, Vs, D, qkv, g, b, kvh, j0);
        __syncthreads();
        if (!active || j0 > i) continue;
        const int j = j0 + lane;
        float s = -INFINITY;
        if (j <= i) {
            float dot = 0.f;
            for (int d = 0; d < D; ++d) dot += q[d] * Ks[lane * ldk + d];
            s = g.score(dot, h, i, j);
        }
        const float m_new = fmaxf(m, warp_reduce(s, MaxOp{}));  // finite: key j0 <= i is in
        const float p = j <= i ? expf(s - m_new) : 0.f;
        const float corr = expf(m - m_new);  // 0 on the first tile (m = -inf)
        l = l * corr + warp_reduce(p, SumOp{});
        m = m_new;
#pragma unroll
        for (int r = 0; r < kChunks; ++r) acc[r] *= corr;
        const float pz = g.drop.rate > 0.f && j <= i ? p * g.drop_scale(b, h, i, j) : p;
        accumulate_rows(acc, pz, Vs, D, min(kTile, i - j0 + 1), D);
    }
    if (!active) return;
    float* o = out + g.out_at(b, i, h);
    const float inv = 1.f / l;
#pragma unroll
    for (int r = 0; r < kChunks; ++r) {
        const int d = lane + 32 * r;
        if (d < D) o[d] = acc[r] * inv;
    }
    if (lane == 0) lse[(static_cast<std::size_t>(b) * g.H + h) * g.T + i] = m + logf(l);
}

}  // namespace

void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int H, int Hkv,
                       int D, const float* alibi_slopes, const AttnDropout* dropout, float scale,
                       const DistanceBias* dist) {
    MESHLM_CHECK(H >= 1 && Hkv >= 1 && H % Hkv == 0 && D >= 1 && D <= kMaxAttentionHeadDim,
                 "attention: H ", H, ", Hkv ", Hkv, ", D ", D);
    if (B == 0 || T == 0) return;
    const AttnGeom g = make_geom(T, H, Hkv, D, alibi_slopes, scale, dropout, dist);
    if (tiled_attention(D)) return attention_forward_tiled(out, lse, qkv, B, g);
    const dim3 grid((T + kRows - 1) / kRows, B * H);
    const std::size_t smem = sizeof(float) * (kTile * (D + 1) + kTile * D + kRows * D);
    with_chunks(D, [&](auto chunks) {
        launch_attention(attention_forward_kernel<decltype(chunks)::value>, grid, smem, out, lse,
                         qkv, g);
    });
}

}  // namespace meshlm::kernels::cuda

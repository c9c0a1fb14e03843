// What the attention kernels share: the qkv layout, the ALiBi bias, the tile sizes, and the
// launch (dynamic shared memory above 48 KiB must be opted into per kernel).
//
// Layout (kernels.h): qkv row (b, t) holds H query heads, then Hkv key heads, then Hkv value
// heads, D floats each; query head h reads key/value head h / (H / Hkv). out [B, T, H D],
// lse [B, H, T].
//
// Tiling: a block has kRows warps; each warp owns one row (a query row in the forward and the
// dQ pass, a key row in the dK/dV pass) and keeps its D-wide accumulators in registers, kChunks
// = ceil(D / 32) per lane (dim d = lane + 32 r). The other side streams through shared memory
// kTile rows at a time, one row per lane for the dot products; rows a lane reads whole are
// padded to D + 1 floats so the 32 lanes hit 32 different banks.
//
// Dropout on the probabilities (AttnDropout): the keep-scale of (b, h, i, j) is draw
// (((row0 + b) n_head + head0 + h) T + i) T + j of the Philox stream, the CPU's mask
// (cpu/dropout_mask.h) bit for bit; each pass regenerates it where it needs it.
//
// A learned distance bias (DistanceBias, T5) adds bias[h, i - j] to score (i, j) after ALiBi's
// term, the CPU's order; its gradient is a pass of its own (attention_distance.cu).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <type_traits>

#include "meshlm/core/error.h"
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/philox.cuh"
#include "meshlm/kernels/cuda/reduce.cuh"

namespace meshlm::kernels::cuda {

constexpr int kRows = 8;   // warps per block
constexpr int kTile = 32;  // streamed rows per tile: one per lane

// The dropout of a pass: rate 0 keeps every probability.
struct AttnDrop {
    float rate = 0.f, keep = 1.f;  // keep = 1 / (1 - rate), the CPU's float
    std::uint64_t seed = 0, stream = 0;
    std::int64_t row0 = 0;
    int head0 = 0, n_head = 0;
};

struct AttnGeom {
    int T, H, Hkv, D;
    int W;      // (H + 2 Hkv) D, the row width of qkv
    int group;  // H / Hkv query heads per key/value head
    float scale;
    const float* slopes;  // [H] or null
    AttnDrop drop;
    DistanceBias dist;  // bias null: none

    __device__ const float* q(const float* qkv, int b, int t, int h) const {
        return qkv + (static_cast<std::size_t>(b) * T + t) * W + static_cast<std::size_t>(h) * D;
    }
    __device__ const float* k(const float* qkv, int b, int t, int g) const {
        return q(qkv, b, t, H + g);
    }
    __device__ const float* v(const float* qkv, int b, int t, int g) const {
        return q(qkv, b, t, H + Hkv + g);
    }
    // Score (i, j) of head h from q.k: scale q.k, then -slope[h] (i - j) with ALiBi, then the
    // distance bias, each term added as the CPU adds it.
    __device__ float score(float qk, int h, int i, int j) const {
        float s = scale * qk;
        if (slopes) s += -(slopes[h] * static_cast<float>(i - j));
        if (dist.bias) s += dist.bias[static_cast<std::size_t>(h) * dist.ld + (i - j)];
        return s;
    }
    // The dropout keep-scale of query i, key j of (b, h): 0 or 1 / (1 - rate).
    __device__ float drop_scale(int b, int h, int i, int j) const {
        const std::uint64_t head = static_cast<std::uint64_t>(drop.row0 + b) * drop.n_head +
                                   static_cast<std::uint64_t>(drop.head0 + h);
        const std::uint64_t x = (head * T + i) * T + j;
        return dropout_scale(philox4x32(x >> 2, drop.seed, drop.stream).w[x & 3], drop.rate,
                             drop.keep);
    }
    // row (b, t) of a [B, T, H D] tensor, head h
    __device__ std::size_t out_at(int b, int t, int h) const {
        return (static_cast<std::size_t>(b) * T + t) * H * D + static_cast<std::size_t>(h) * D;
    }
};

// Rows j0 .. j0 + kTile - 1 of key/value head kvh into Ks and Vs (row strides ldk, ldv), zeros
// past T. Every thread of the block takes part.
__device__ inline void load_kv_tile(float* Ks, int ldk, float* Vs, int ldv, const float* qkv,
                                    const AttnGeom& g, int b, int kvh, int j0) {
    for (int e = threadIdx.x; e < kTile * g.D; e += blockDim.x) {
        const int jj = e / g.D, d = e % g.D, j = j0 + jj;
        const bool ok = j < g.T;
        Ks[jj * ldk + d] = ok ? g.k(qkv, b, j, kvh)[d] : 0.f;
        Vs[jj * ldv + d] = ok ? g.v(qkv, b, j, kvh)[d] : 0.f;
    }
}

// acc += sum over rows jj < n of w_jj * rows[jj], where w_jj is lane jj's w: each lane adds its
// dims d = lane + 32 r. The whole warp takes part.
template <int kChunks>
__device__ inline void accumulate_rows(float (&acc)[kChunks], float w, const float* rows, int ld,
                                       int n, int D) {
    const int lane = threadIdx.x % 32;
    for (int jj = 0; jj < n; ++jj) {
        const float wj = __shfl_sync(kFullMask, w, jj);
#pragma unroll
        for (int r = 0; r < kChunks; ++r) {
            const int d = lane + 32 * r;
            if (d < D) acc[r] += wj * rows[jj * ld + d];
        }
    }
}

// The pass's dropout, checked as the CPU checks it (rate 0 or a null one: none).
inline AttnDrop make_drop(const AttnDropout* d, int H) {
    if (d == nullptr || d->rate == 0.f) return {};
    MESHLM_CHECK(d->rate > 0.f && d->rate < 1.f, "attention dropout rate ", d->rate,
                 " outside [0, 1)");
    MESHLM_CHECK(d->head0 >= 0 && d->n_head >= d->head0 + H, "attention dropout heads ", d->head0,
                 "..", d->head0 + H, " outside the model's ", d->n_head);
    MESHLM_CHECK(d->row0 >= 0, "attention dropout row0 ", d->row0, " < 0");
    return {d->rate, 1.f / (1.f - d->rate), d->seed, d->stream, d->row0, d->head0, d->n_head};
}

inline AttnGeom make_geom(int T, int H, int Hkv, int D, const float* slopes, float scale,
                          const AttnDropout* dropout, const DistanceBias* dist) {
    const bool biased = dist && dist->bias;
    MESHLM_CHECK(!biased || dist->ld >= T, "distance bias rows of ", dist ? dist->ld : 0, " for ",
                 T, " positions");
    return AttnGeom{T,
                    H,
                    Hkv,
                    D,
                    (H + 2 * Hkv) * D,
                    H / Hkv,
                    scale > 0.f ? scale : 1.f / std::sqrt(static_cast<float>(D)),
                    slopes,
                    make_drop(dropout, H),
                    biased ? *dist : DistanceBias{}};
}

// Launches kernel<<<grid, kRows * 32, smem>>>(args...), opting into the shared memory it needs.
template <typename... Params, typename... Args>
void launch_attention(void (*kernel)(Params...), dim3 grid, std::size_t smem, Args... args) {
    MESHLM_CHECK(grid.y <= 65535, "attention: ", grid.y, " (batch x heads) exceeds 65535");
    if (smem > 48 * 1024)
        MESHLM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(smem)));
    kernel<<<grid, kRows * 32, smem>>>(args...);
    MESHLM_CUDA_LAUNCHED();
}

// grad[h * ld + d] += the distance bias's gradient (attention_distance.cu); g.dist is the bias.
void attention_distance_grad(float* grad, int ld, const float* dout, const float* out,
                             const float* lse, const float* qkv, int B, const AttnGeom& g);

// Calls fn(std::integral_constant<int, kChunks>) for D <= 32 kChunks.
template <typename Fn>
void with_chunks(int D, Fn&& fn) {
    switch ((D + 31) / 32) {
        case 1:
            return fn(std::integral_constant<int, 1>{});
        case 2:
            return fn(std::integral_constant<int, 2>{});
        case 3:
            return fn(std::integral_constant<int, 3>{});
        case 4:
            return fn(std::integral_constant<int, 4>{});
        case 5:
            return fn(std::integral_constant<int, 5>{});
        case 6:
            return fn(std::integral_constant<int, 6>{});
        case 7:
            return fn(std::integral_constant<int, 7>{});
        case 8:
            return fn(std::integral_constant<int, 8>{});
    }
    MESHLM_CHECK(false, "attention: head dim ", D, " outside 1..", kMaxAttentionHeadDim);
}

}  // namespace meshlm::kernels::cuda

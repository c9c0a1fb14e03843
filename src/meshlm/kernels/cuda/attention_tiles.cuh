// What the register-tiled attention kernels share (attention_tiled_forward.cu,
// attention_tiled_backward.cu): they take head dims D <= 64 that are a multiple of 4 (GPT-2's
// 64 among them); the warp-per-row kernels keep the rest.
//
// Why tiles: the warp-per-row kernels give each lane a whole D-term dot product against a key in
// shared memory, one shared load per FMA, which bounds them at a few TFLOP/s. Here a block of
// 256 threads owns a 64 x 64 tile of scores and thread (ty, tx) = (threadIdx.x / 16,
// threadIdx.x % 16) its 4 x 4 block: rows ty * 4 + r, columns tx * 4 + c. The operands of a
// score product sit transposed in shared memory ([D][64]), so each step of d reads one float4
// of rows and one of columns for 16 FMAs; the products that follow (P V, dS K, ...) read a
// tile's weights row by row and a float4 of the thread's 4 output dims (tx * 4 + e).
//
// A row of the tile spans the 16 lanes of one half-warp, so its max and sum are shuffles
// within the half (warp_reduce<16>). Every thread reaches every barrier and shuffle: rows and
// columns past T are masked, not skipped. Sums run in a fixed order and every output element is
// written by one thread, so results repeat bit for bit, as with the warp-per-row kernels.
#pragma once

#include "meshlm/kernels/cuda/attention_common.cuh"

namespace meshlm::kernels::cuda {

constexpr int kTileRows = 64;           // queries (or keys) per block, and per streamed tile
constexpr int kTileLd = kTileRows + 4;  // row stride of a row-major weight tile (P, dS)
constexpr int kTiledMaxD = 64;
static_assert(kRows * 32 == 256, "the tiled kernels assume 256 threads per block");

inline bool tiled_attention(int D) {
    return D % 4 == 0 && D <= kTiledMaxD;
}

__device__ inline int tile_tx() {
    return threadIdx.x % 16;
}
__device__ inline int tile_ty() {
    return threadIdx.x / 16;
}

// Four consecutive floats of shared memory (16-byte aligned) in one load / store on the GPU.
__device__ inline void lds4(const float* p, float (&v)[4]) {
#ifdef __CUDACC__
    const float4 t = *reinterpret_cast<const float4*>(p);
    v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
#else
    for (int e = 0; e < 4; ++e) v[e] = p[e];
#endif
}
__device__ inline void sts4(float* p, const float (&v)[4]) {
#ifdef __CUDACC__
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
#else
    for (int e = 0; e < 4; ++e) p[e] = v[e];
#endif
}

// Rows 0..63 of the D-wide vectors at(row) into dst[d * 64 + row] (transposed), zeros from
// row n on. Consecutive threads take consecutive rows, so the stores hit distinct banks.
template <typename At>
__device__ inline void load_transposed(float* dst, int D, int n, At at) {
    for (int e = threadIdx.x; e < kTileRows * (D / 4); e += blockDim.x) {
        const int row = e % kTileRows, d = (e / kTileRows) * 4;
        const float* src = row < n ? at(row) + d : nullptr;
#pragma unroll
        for (int c = 0; c < 4; ++c) dst[(d + c) * kTileRows + row] = src ? src[c] : 0.f;
    }
}

// The same rows row-major, dst[row * D + d].
template <typename At>
__device__ inline void load_rows(float* dst, int D, int n, At at) {
    for (int e = threadIdx.x; e < kTileRows * D; e += blockDim.x) {
        const int row = e / D, d = e % D;
        dst[e] = row < n ? at(row)[d] : 0.f;
    }
}

// s[r][c] = sum over d of At[d][ty * 4 + r] * Bt[d][tx * 4 + c], in increasing d.
__device__ inline void tile_dots(float (&s)[4][4], const float* At, const float* Bt, int D) {
    const int tx = tile_tx(), ty = tile_ty();
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int c = 0; c < 4; ++c) s[r][c] = 0.f;
#pragma unroll 4
    for (int d = 0; d < D; ++d) {
        float a[4], b[4];
        lds4(At + d * kTileRows + ty * 4, a);
        lds4(Bt + d * kTileRows + tx * 4, b);
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
            for (int c = 0; c < 4; ++c) s[r][c] += a[r] * b[c];
    }
}

// acc[r][e] += sum over j < n of Wt[(ty * 4 + r) * kTileLd + j] * R[j * D + tx * 4 + e], in
// increasing j: a weight tile (row-major) times the rows R (row-major, D wide).
__device__ inline void tile_accumulate(float (&acc)[4][4], const float* Wt, const float* R, int D,
                                       int n) {
    const int tx = tile_tx(), ty = tile_ty();
    if (tx * 4 >= D) return;  // no barrier or shuffle inside: the idle columns may leave
    for (int j = 0; j < n; ++j) {
        float v[4];
        lds4(R + j * D + tx * 4, v);
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const float w = Wt[(ty * 4 + r) * kTileLd + j];
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[r][e] += w * v[e];
        }
    }
}

// Each of the n rows' sum over d of dO * O (the backward's Dvec) and its lse, into Dv[64] and
// Ls[64] (zeros from row n on): a warp per row. Rows i0 + row of (b, h).
__device__ inline void tile_row_stats(float* Dv, float* Ls, const float* dout, const float* out,
                                      const float* lse, const AttnGeom& g, int b, int h, int i0,
                                      int n) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int row = warp; row < kTileRows; row += kRows) {
        float part = 0.f;
        if (row < n) {
            const std::size_t at = g.out_at(b, i0 + row, h);
            for (int d = lane; d < g.D; d += 32) part += dout[at + d] * out[at + d];
        }
        part = warp_reduce(part, SumOp{});
        if (lane == 0) {
            Dv[row] = part;
            Ls[row] = row < n ? lse[(static_cast<std::size_t>(b) * g.H + h) * g.T + i0 + row] : 0.f;
        }
    }
}

// The tiled kernels (attention_tiled_forward.cu, attention_tiled_backward.cu); D: tiled_attention.
void attention_forward_tiled(float* out, float* lse, const float* qkv, int B, const AttnGeom& g);
void attention_backward_tiled(float* dqkv, const float* dout, const float* out, const float* lse,
                              const float* qkv, int B, const AttnGeom& g);

}  // namespace meshlm::kernels::cuda

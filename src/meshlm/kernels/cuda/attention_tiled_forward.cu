// Causal attention forward, register-tiled (attention_tiles.cuh), for D <= 64: the contract of
// attention_forward.cu's warp-per-row kernel, with its online softmax per row (running max m
// and sum l, the output rescaled by exp(m_old - m_new) when m grows) kept by the 16 threads of
// the row. A block owns 64 query rows of one (b, h) and streams 64-key tiles up to its last row.
#include "meshlm/kernels/cuda/attention_tiles.cuh"

namespace meshlm::kernels::cuda {

namespace {

// Masks, exponentiates and folds one tile's scores into the rows' running softmax; writes the
// weights that meet V (P, times the dropout's keep-scales) to Ps.
__device__ inline void softmax_tile(float (&s)[4][4], float (&m)[4], float (&l)[4],
                                    float (&acc)[4][4], float* Ps, const AttnGeom& g, int b, int h,
                                    int q0, int k0, int last) {
    const int tx = tile_tx(), ty = tile_ty();
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        const int i = q0 + ty * 4 + r;
        float mx = -INFINITY;
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            const int j = k0 + tx * 4 + c;
            s[r][c] = i <= last && j <= i ? g.score(s[r][c], h, i, j) : -INFINITY;
            mx = fmaxf(mx, s[r][c]);
        }
        const float m_new = fmaxf(m[r], warp_reduce<16>(mx, MaxOp{}));
        const bool none = m_new == -INFINITY;  // a row past T: nothing to weigh
        float p[4], sum = 0.f;
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            p[c] = none || s[r][c] == -INFINITY ? 0.f : expf(s[r][c] - m_new);
            sum += p[c];
        }
        const float corr = none ? 1.f : expf(m[r] - m_new);  // 0 on the row's first tile
        l[r] = l[r] * corr + warp_reduce<16>(sum, SumOp{});
        m[r] = m_new;
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[r][e] *= corr;
        if (g.drop.rate > 0.f)
#pragma unroll
            for (int c = 0; c < 4; ++c)
                if (p[c] != 0.f) p[c] *= g.drop_scale(b, h, i, k0 + tx * 4 + c);
        sts4(Ps + (ty * 4 + r) * kTileLd + tx * 4, p);
    }
}

__global__ void __launch_bounds__(256)
    attention_forward_tiled_kernel(float* out, float* lse, const float* qkv, AttnGeom g) {
    extern __shared__ float smem[];
    const int D = g.D;
    float* Qt = smem;                // [D][64] the block's query rows, transposed
    float* Kt = Qt + D * kTileRows;  // [D][64] a key tile, transposed
    float* Vs = Kt + D * kTileRows;  // [64][D] its value rows
    float* Ps = Vs + kTileRows * D;  // [64][kTileLd] the tile's weights
    const int b = blockIdx.y / g.H, h = blockIdx.y % g.H, kvh = h / g.group;
    const int q0 = blockIdx.x * kTileRows, last = min(g.T, q0 + kTileRows) - 1;
    load_transposed(Qt, D, last - q0 + 1, [&](int r) { return g.q(qkv, b, q0 + r, h); });
    float acc[4][4] = {}, m[4], l[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) m[r] = -INFINITY, l[r] = 0.f;
    for (int k0 = 0; k0 <= last; k0 += kTileRows) {
        const int nk = min(kTileRows, last - k0 + 1);
        __syncthreads();  // the previous tile is used up (and Qt is written)
        load_transposed(Kt, D, nk, [&](int r) { return g.k(qkv, b, k0 + r, kvh); });
        load_rows(Vs, D, nk, [&](int r) { return g.v(qkv, b, k0 + r, kvh); });
        __syncthreads();
        float s[4][4];
        tile_dots(s, Qt, Kt, D);
        softmax_tile(s, m, l, acc, Ps, g, b, h, q0, k0, last);
        __syncthreads();
        tile_accumulate(acc, Ps, Vs, D, nk);
    }
    const int tx = tile_tx(), ty = tile_ty();
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        const int i = q0 + ty * 4 + r;
        if (i > last) continue;
        float* o = out + g.out_at(b, i, h);
        const float inv = 1.f / l[r];
#pragma unroll
        for (int e = 0; e < 4; ++e)
            if (tx * 4 + e < D) o[tx * 4 + e] = acc[r][e] * inv;
        if (tx == 0) lse[(static_cast<std::size_t>(b) * g.H + h) * g.T + i] = m[r] + logf(l[r]);
    }
}

}  // namespace

void attention_forward_tiled(float* out, float* lse, const float* qkv, int B, const AttnGeom& g) {
    const dim3 grid((g.T + kTileRows - 1) / kTileRows, B * g.H);
    const std::size_t smem = sizeof(float) * (3 * g.D * kTileRows + kTileRows * kTileLd);
    launch_attention(attention_forward_tiled_kernel, grid, smem, out, lse, qkv, g);
}

}  // namespace meshlm::kernels::cuda

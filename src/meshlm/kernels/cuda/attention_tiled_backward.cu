// Causal attention backward, register-tiled (attention_tiles.cuh), for D <= 64: the passes and
// formulas of attention_backward.cu (P recomputed from the saved lse, dS = P (dP - Dvec), with
// dropout dS = Pd dP - P Dvec and dV = Pd^T dO), each gradient row owned by one block so every
// element is written once, without atomics:
//   dQ pass:    a block per 64 query rows of (b, h) streams the key tiles up to its last row;
//   dK/dV pass: a block per 64 key rows of (b, kv head) streams the query tiles from its first
//               row on, for each query head of the group in order (the GQA sum).
#include "meshlm/kernels/cuda/attention_tiles.cuh"

namespace meshlm::kernels::cuda {

namespace {

// dS (and, for the dK/dV pass, the weights that met V) of one tile from its scores s and dP,
// written row-major to Ss (and Ps). `keys_are_rows`: the tile's rows are keys and its columns
// queries (the dK/dV pass), else the other way round. Dv and Ls: the queries' Dvec and lse.
__device__ inline void grad_tile(const float (&s)[4][4], const float (&dp)[4][4], float* Ss,
                                 float* Ps, const float* Dv, const float* Ls, const AttnGeom& g,
                                 int b, int h, int row0, int col0, bool keys_are_rows) {
    const int tx = tile_tx(), ty = tile_ty();
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        float ds[4], pd[4];
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            const int row = ty * 4 + r, col = tx * 4 + c;
            const int qi = keys_are_rows ? col : row;  // the query's place in Dv and Ls
            const int i = keys_are_rows ? col0 + col : row0 + row;
            const int j = keys_are_rows ? row0 + row : col0 + col;
            ds[c] = pd[c] = 0.f;
            if (i >= g.T || j > i) continue;
            const float p = expf(g.score(s[r][c], h, i, j) - Ls[qi]);
            if (g.drop.rate > 0.f) {
                pd[c] = p * g.drop_scale(b, h, i, j);
                ds[c] = pd[c] * dp[r][c] - p * Dv[qi];
            } else {
                pd[c] = p;
                ds[c] = p * (dp[r][c] - Dv[qi]);
            }
        }
        sts4(Ss + (ty * 4 + r) * kTileLd + tx * 4, ds);
        if (Ps) sts4(Ps + (ty * 4 + r) * kTileLd + tx * 4, pd);
    }
}

__global__ void __launch_bounds__(256)
    attention_backward_dq_tiled(float* dqkv, const float* dout, const float* out, const float* lse,
                                const float* qkv, AttnGeom g) {
    extern __shared__ float smem[];
    const int D = g.D, n = D * kTileRows;
    float* Qt = smem;                      // [D][64] the block's query rows, transposed
    float* dOt = Qt + n;                   // [D][64] their output gradients, transposed
    float* Kt = dOt + n;                   // [D][64] a key tile, transposed
    float* Vt = Kt + n;                    // [D][64] its values, transposed
    float* Ks = Vt + n;                    // [64][D] its key rows
    float* Ss = Ks + n;                    // [64][kTileLd] dS
    float* Dv = Ss + kTileRows * kTileLd;  // [64] the query rows' Dvec
    float* Ls = Dv + kTileRows;            // [64] and lse
    const int b = blockIdx.y / g.H, h = blockIdx.y % g.H, kvh = h / g.group;
    const int q0 = blockIdx.x * kTileRows, last = min(g.T, q0 + kTileRows) - 1;
    const int nq = last - q0 + 1;
    load_transposed(Qt, D, nq, [&](int r) { return g.q(qkv, b, q0 + r, h); });
    load_transposed(dOt, D, nq, [&](int r) { return dout + g.out_at(b, q0 + r, h); });
    tile_row_stats(Dv, Ls, dout, out, lse, g, b, h, q0, nq);
    float acc[4][4] = {};
    for (int k0 = 0; k0 <= last; k0 += kTileRows) {
        const int nk = min(kTileRows, last - k0 + 1);
        __syncthreads();  // the previous tile is used up (and the query side is written)
        load_transposed(Kt, D, nk, [&](int r) { return g.k(qkv, b, k0 + r, kvh); });
        load_transposed(Vt, D, nk, [&](int r) { return g.v(qkv, b, k0 + r, kvh); });
        load_rows(Ks, D, nk, [&](int r) { return g.k(qkv, b, k0 + r, kvh); });
        __syncthreads();
        float s[4][4], dp[4][4];
        tile_dots(s, Qt, Kt, D);
        tile_dots(dp, dOt, Vt, D);
        grad_tile(s, dp, Ss, nullptr, Dv, Ls, g, b, h, q0, k0, false);
        __syncthreads();
        tile_accumulate(acc, Ss, Ks, D, nk);
    }
    const int tx = tile_tx(), ty = tile_ty();
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        const int i = q0 + ty * 4 + r;
        if (i > last) continue;
        float* dq = dqkv + (g.q(qkv, b, i, h) - qkv);
#pragma unroll
        for (int e = 0; e < 4; ++e)
            if (tx * 4 + e < D) dq[tx * 4 + e] = g.scale * acc[r][e];
    }
}

__global__ void __launch_bounds__(256)
    attention_backward_dkv_tiled(float* dqkv, const float* dout, const float* out, const float* lse,
                                 const float* qkv, AttnGeom g) {
    extern __shared__ float smem[];
    const int D = g.D, n = D * kTileRows;
    float* Kt = smem;                      // [D][64] the block's key rows, transposed
    float* Vt = Kt + n;                    // [D][64] their values, transposed
    float* Qt = Vt + n;                    // [D][64] a query tile, transposed
    float* dOt = Qt + n;                   // [D][64] its output gradients, transposed
    float* Qs = dOt + n;                   // [64][D] its query rows
    float* dOs = Qs + n;                   // [64][D] and output gradient rows
    float* Ss = dOs + n;                   // [64][kTileLd] dS^T (keys x queries)
    float* Ps = Ss + kTileRows * kTileLd;  // [64][kTileLd] the weights that met V, transposed
    float* Dv = Ps + kTileRows * kTileLd;  // [64] the query tile's Dvec
    float* Ls = Dv + kTileRows;            // [64] and lse
    const int b = blockIdx.y / g.Hkv, kvh = blockIdx.y % g.Hkv;
    const int k0 = blockIdx.x * kTileRows, nk = min(kTileRows, g.T - k0);
    load_transposed(Kt, D, nk, [&](int r) { return g.k(qkv, b, k0 + r, kvh); });
    load_transposed(Vt, D, nk, [&](int r) { return g.v(qkv, b, k0 + r, kvh); });
    float dk[4][4] = {}, dv[4][4] = {};
    for (int hh = 0; hh < g.group; ++hh) {
        const int h = kvh * g.group + hh;
        // Queries before k0 see none of the block's keys.
        for (int i0 = k0; i0 < g.T; i0 += kTileRows) {
            const int nq = min(kTileRows, g.T - i0);
            __syncthreads();  // the previous tile is used up (and the key side is written)
            load_transposed(Qt, D, nq, [&](int r) { return g.q(qkv, b, i0 + r, h); });
            load_transposed(dOt, D, nq, [&](int r) { return dout + g.out_at(b, i0 + r, h); });
            load_rows(Qs, D, nq, [&](int r) { return g.q(qkv, b, i0 + r, h); });
            load_rows(dOs, D, nq, [&](int r) { return dout + g.out_at(b, i0 + r, h); });
            tile_row_stats(Dv, Ls, dout, out, lse, g, b, h, i0, nq);
            __syncthreads();
            float s[4][4], dp[4][4];
            tile_dots(s, Kt, Qt, D);
            tile_dots(dp, Vt, dOt, D);
            grad_tile(s, dp, Ss, Ps, Dv, Ls, g, b, h, k0, i0, true);
            __syncthreads();
            tile_accumulate(dv, Ps, dOs, D, nq);
            tile_accumulate(dk, Ss, Qs, D, nq);
        }
    }
    const int tx = tile_tx(), ty = tile_ty();
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        const int j = k0 + ty * 4 + r;
        if (j >= g.T) continue;
        float* gk = dqkv + (g.k(qkv, b, j, kvh) - qkv);
        float* gv = dqkv + (g.v(qkv, b, j, kvh) - qkv);
#pragma unroll
        for (int e = 0; e < 4; ++e)
            if (tx * 4 + e < D) {
                gk[tx * 4 + e] = g.scale * dk[r][e];
                gv[tx * 4 + e] = dv[r][e];
            }
    }
}

}  // namespace

void attention_backward_tiled(float* dqkv, const float* dout, const float* out, const float* lse,
                              const float* qkv, int B, const AttnGeom& g) {
    const unsigned blocks = (g.T + kTileRows - 1) / kTileRows;
    const std::size_t tile = static_cast<std::size_t>(g.D) * kTileRows, w = kTileRows * kTileLd;
    launch_attention(attention_backward_dq_tiled, dim3(blocks, B * g.H),
                     sizeof(float) * (5 * tile + w + 2 * kTileRows), dqkv, dout, out, lse, qkv, g);
    launch_attention(attention_backward_dkv_tiled, dim3(blocks, B * g.Hkv),
                     sizeof(float) * (6 * tile + 2 * w + 2 * kTileRows), dqkv, dout, out, lse, qkv,
                     g);
}

}  // namespace meshlm::kernels::cuda

// Causal attention backward on the GPU, flash-style (kernels.h's contract). With P recomputed
// from S and the saved lse, and Dvec = rowsum(dO * O):
//   dS = P * (dP - Dvec),  dP = dO V^T
//   dQ = scale dS K,  dK = scale dS^T Q,  dV = P^T dO
// With dropout, Pd = P * Z (the forward's keep-scales, regenerated) weighted V, so
//   dS = Pd * dP - P * Dvec,  dV = Pd^T dO.
// Two passes, each row owned by one warp so every gradient element is written once, in a
// fixed order, without atomics (deterministic, and dqkv is overwritten):
//   dQ pass:    a warp per query row i streams key/value tiles j <= i (the forward's shape);
//   dK/dV pass: a warp per key row j streams query tiles i >= j of every query head that
//               shares its key/value head, in head order (the GQA sum).
// The dK/dV pass recomputes Dvec for each query tile it loads (D products per row, small next
// to the tile's D x 32 per key row), so the backward needs no scratch memory. A distance bias's
// gradient is a third pass (attention_distance.cu). Head dims of at most 64 that are a multiple
// of 4 take the register-tiled passes instead (attention_tiled_backward.cu).
#include "meshlm/kernels/cuda/attention_common.cuh"
#include "meshlm/kernels/cuda/attention_tiles.cuh"
#include "meshlm/kernels/cuda/cuda_kernels.h"

namespace meshlm::kernels::cuda {

namespace {

template <int kChunks>
__global__ void __launch_bounds__(kRows * 32)
    attention_backward_dq(float* dqkv, const float* dout, const float* out, const float* lse,
                          const float* qkv, AttnGeom g) {
    extern __shared__ float smem[];
    const int D = g.D, ld = D + 1;
    float* Ks = smem;             // [kTile][D + 1]
    float* Vs = Ks + kTile * ld;  // [kTile][D + 1]
    float* Qs = Vs + kTile * ld;  // [kRows][D]
    float* dOs = Qs + kRows * D;  // [kRows][D]
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int b = blockIdx.y / g.H, h = blockIdx.y % g.H, kvh = h / g.group;
    const int row0 = blockIdx.x * kRows, i = row0 + warp;
    const bool active = i < g.T;
    const int last = min(g.T - 1, row0 + kRows - 1);
    float* q = Qs + warp * D;
    float* dO = dOs + warp * D;
    float Di = 0.f, L = 0.f;
    if (active) {
        const float* o = out + g.out_at(b, i, h);
        const float* go = dout + g.out_at(b, i, h);
        float part = 0.f;
        for (int d = lane; d < D; d += 32) {
            q[d] = g.q(qkv, b, i, h)[d];
            dO[d] = go[d];
            part += go[d] * o[d];
        }
        Di = warp_reduce(part, SumOp{});
        L = lse[(static_cast<std::size_t>(b) * g.H + h) * g.T + i];
    }
    float acc[kChunks];
#pragma unroll
    for (int r = 0; r < kChunks; ++r) acc[r] = 0.f;
    for (int j0 = 0; j0 <= last; j0 += kTile) {
        __syncthreads();
        load_kv_tile(Ks, ld, Vs, ld, qkv, g, b, kvh, j0);
        __syncthreads();
        if (!active || j0 > i) continue;
        const int j = j0 + lane;
        float ds = 0.f;
        if (j <= i) {
            float qk = 0.f, dp = 0.f;
            for (int d = 0; d < D; ++d) {
                qk += q[d] * Ks[lane * ld + d];
                dp += dO[d] * Vs[lane * ld + d];
            }
            const float p = expf(g.score(qk, h, i, j) - L);
            ds = g.drop.rate > 0.f ? p * g.drop_scale(b, h, i, j) * dp - p * Di : p * (dp - Di);
        }
        accumulate_rows(acc, ds, Ks, ld, min(kTile, i - j0 + 1), D);
    }
    if (!active) return;
    float* dq = dqkv + (g.q(qkv, b, i, h) - qkv);
#pragma unroll
    for (int r = 0; r < kChunks; ++r) {
        const int d = lane + 32 * r;
        if (d < D) dq[d] = g.scale * acc[r];
    }
}

template <int kChunks>
__global__ void __launch_bounds__(kRows * 32)
    attention_backward_dkv(float* dqkv, const float* dout, const float* out, const float* lse,
                           const float* qkv, AttnGeom g) {
    extern __shared__ float smem[];
    const int D = g.D, ld = D + 1;
    float* Qs = smem;              // [kTile][D + 1]  query rows of the tile
    float* dOs = Qs + kTile * ld;  // [kTile][D + 1]  their output gradients
    float* Ls = dOs + kTile * ld;  // [kTile]         their lse
    float* Dvs = Ls + kTile;       // [kTile]         their rowsum(dO * O)
    float* Kw = Dvs + kTile;       // [kRows][D]      each warp's key row
    float* Vw = Kw + kRows * D;    // [kRows][D]      and value row
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int b = blockIdx.y / g.Hkv, kvh = blockIdx.y % g.Hkv;
    const int row0 = blockIdx.x * kRows, j = row0 + warp;
    const bool active = j < g.T;
    float* k = Kw + warp * D;
    float* v = Vw + warp * D;
    if (active)
        for (int d = lane; d < D; d += 32) {
            k[d] = g.k(qkv, b, j, kvh)[d];
            v[d] = g.v(qkv, b, j, kvh)[d];
        }
    float dk[kChunks], dv[kChunks];
#pragma unroll
    for (int r = 0; r < kChunks; ++r) dk[r] = dv[r] = 0.f;
    for (int hh = 0; hh < g.group; ++hh) {
        const int h = kvh * g.group + hh;
        // Queries before row0 attend to none of this block's keys.
        for (int i0 = row0; i0 < g.T; i0 += kTile) {
            __syncthreads();
            for (int e = threadIdx.x; e < kTile * D; e += blockDim.x) {
                const int ii = e / D, d = e % D, i = i0 + ii;
                const bool ok = i < g.T;
                Qs[ii * ld + d] = ok ? g.q(qkv, b, i, h)[d] : 0.f;
                dOs[ii * ld + d] = ok ? dout[g.out_at(b, i, h) + d] : 0.f;
            }
            for (int ii = warp; ii < kTile; ii += kRows) {  // Dvec and lse of the tile's rows
                const int i = i0 + ii;
                float part = 0.f;
                if (i < g.T) {
                    const float* o = out + g.out_at(b, i, h);
                    const float* go = dout + g.out_at(b, i, h);
                    for (int d = lane; d < D; d += 32) part += go[d] * o[d];
                }
                part = warp_reduce(part, SumOp{});
                if (lane == 0) {
                    Dvs[ii] = part;
                    Ls[ii] = i < g.T ? lse[(static_cast<std::size_t>(b) * g.H + h) * g.T + i] : 0.f;
                }
            }
            __syncthreads();
            if (!active) continue;
            const int i = i0 + lane;
            float p = 0.f, ds = 0.f;
            if (i < g.T && i >= j) {
                float qk = 0.f, dp = 0.f;
                for (int d = 0; d < D; ++d) {
                    qk += Qs[lane * ld + d] * k[d];
                    dp += dOs[lane * ld + d] * v[d];
                }
                const float pp = expf(g.score(qk, h, i, j) - Ls[lane]);
                if (g.drop.rate > 0.f) {
                    p = pp * g.drop_scale(b, h, i, j);  // Pd: what weighted V
                    ds = p * dp - pp * Dvs[lane];
                } else {
                    p = pp;
                    ds = pp * (dp - Dvs[lane]);
                }
            }
            const int n_queries = min(kTile, g.T - i0);
            accumulate_rows(dv, p, dOs, ld, n_queries, D);
            accumulate_rows(dk, ds, Qs, ld, n_queries, D);
        }
    }
    if (!active) return;
    float* gk = dqkv + (g.k(qkv, b, j, kvh) - qkv);
    float* gv = dqkv + (g.v(qkv, b, j, kvh) - qkv);
#pragma unroll
    for (int r = 0; r < kChunks; ++r) {
        const int d = lane + 32 * r;
        if (d < D) {
            gk[d] = g.scale * dk[r];
            gv[d] = dv[r];
        }
    }
}

// The warp-per-row passes, for the head dims the tiled kernels do not take.
void attention_backward_rows(float* dqkv, const float* dout, const float* out, const float* lse,
                             const float* qkv, int B, const AttnGeom& g) {
    const int T = g.T, D = g.D;
    const unsigned row_blocks = (T + kRows - 1) / kRows;
    const std::size_t dq_smem = sizeof(float) * (2 * kTile * (D + 1) + 2 * kRows * D);
    const std::size_t dkv_smem = sizeof(float) * (2 * kTile * (D + 1) + 2 * kTile + 2 * kRows * D);
    with_chunks(D, [&](auto chunks) {
        constexpr int c = decltype(chunks)::value;
        launch_attention(attention_backward_dq<c>, dim3(row_blocks, B * g.H), dq_smem, dqkv, dout,
                         out, lse, qkv, g);
        launch_attention(attention_backward_dkv<c>, dim3(row_blocks, B * g.Hkv), dkv_smem, dqkv,
                         dout, out, lse, qkv, g);
    });
}

}  // namespace

void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse,
                        const float* qkv, int B, int T, int H, int Hkv, int D,
                        const float* alibi_slopes, const AttnDropout* dropout, float scale,
                        const DistanceBias* dist) {
    MESHLM_CHECK(H >= 1 && Hkv >= 1 && H % Hkv == 0 && D >= 1 && D <= kMaxAttentionHeadDim,
                 "attention: H ", H, ", Hkv ", Hkv, ", D ", D);
    if (B == 0 || T == 0) return;
    const AttnGeom g = make_geom(T, H, Hkv, D, alibi_slopes, scale, dropout, dist);
    if (tiled_attention(D))
        attention_backward_tiled(dqkv, dout, out, lse, qkv, B, g);
    else
        attention_backward_rows(dqkv, dout, out, lse, qkv, B, g);
    if (g.dist.bias && g.dist.grad)
        attention_distance_grad(g.dist.grad, g.dist.ld, dout, out, lse, qkv, B, g);
}

}  // namespace meshlm::kernels::cuda

// The learned distance bias's gradient on the GPU (model.position t5_bias), for the attention
// backward: grad[h, d] += sum over (b, i) of dS(b, h, i, i - d), dS the score gradient before the
// scale (kernels.h's DistanceBias). A warp per (head, distance): lane x takes the query rows
// i = d + x, d + x + 32, ... of every batch row in order, recomputing the pair's P, dP and Dvec
// from qkv, out, dout and lse (3 D products, like the dQ pass), then a shuffle tree adds the
// lanes: each sum has one fixed order and needs no atomics or scratch.
#include "meshlm/kernels/cuda/attention_common.cuh"
#include "meshlm/kernels/cuda/cuda_kernels.h"

namespace meshlm::kernels::cuda {

namespace {

__global__ void __launch_bounds__(kRows * 32)
    attention_distance_grad_kernel(float* grad, int ld, const float* dout, const float* out,
                                   const float* lse, const float* qkv, int B, AttnGeom g) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int h = blockIdx.y, kvh = h / g.group, dd = blockIdx.x * kRows + warp;
    if (dd >= g.T) return;  // a whole warp: no barrier below
    float sum = 0.f;
    for (int b = 0; b < B; ++b)
        for (int i = dd + lane; i < g.T; i += 32) {
            const int j = i - dd;
            const float *q = g.q(qkv, b, i, h), *k = g.k(qkv, b, j, kvh), *v = g.v(qkv, b, j, kvh);
            const float *o = out + g.out_at(b, i, h), *go = dout + g.out_at(b, i, h);
            float qk = 0.f, dp = 0.f, di = 0.f;
            for (int d = 0; d < g.D; ++d) {
                qk += q[d] * k[d];
                dp += go[d] * v[d];
                di += go[d] * o[d];
            }
            const float p =
                expf(g.score(qk, h, i, j) - lse[(static_cast<std::size_t>(b) * g.H + h) * g.T + i]);
            sum += g.drop.rate > 0.f ? p * g.drop_scale(b, h, i, j) * dp - p * di : p * (dp - di);
        }
    sum = warp_reduce(sum, SumOp{});
    if (lane == 0) grad[static_cast<std::size_t>(h) * ld + dd] += sum;
}

}  // namespace

void attention_distance_grad(float* grad, int ld, const float* dout, const float* out,
                             const float* lse, const float* qkv, int B, const AttnGeom& g) {
    const dim3 grid((g.T + kRows - 1) / kRows, g.H);
    launch_attention(attention_distance_grad_kernel, grid, 0, grad, ld, dout, out, lse, qkv, B, g);
}

}  // namespace meshlm::kernels::cuda

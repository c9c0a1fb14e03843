// The parameter gradients of the norms, dw[c] += sum_n dout[n, c] * xhat[n, c] and
// db[c] += sum_n dout[n, c]: a reduction over rows per column, done without atomics so the
// result is the same on every run. A block owns 32 columns; its kColumnRowGroups row groups
// each sum rows n = group, group + kColumnRowGroups, ... in order, then the group sums are added
// in group order. xhat comes from a functor (LayerNorm: (x - mean) * rstd; RMSNorm: x * rstd).
#pragma once

#include <cuda_runtime.h>

namespace meshlm::kernels::cuda {

constexpr int kColumnRowGroups = 16;

template <typename Xhat>
__global__ void norm_column_grads(float* dw, float* db, const float* dout, Xhat xhat, int N,
                                  int C) {
    __shared__ float sw[kColumnRowGroups][33], sb[kColumnRowGroups][33];
    const int c = blockIdx.x * 32 + threadIdx.x, group = threadIdx.y;
    float gw = 0.f, gb = 0.f;
    if (c < C)
        for (int n = group; n < N; n += kColumnRowGroups) {
            const float g = dout[static_cast<std::size_t>(n) * C + c];
            gw += g * xhat(n, c);
            gb += g;
        }
    sw[group][threadIdx.x] = gw;
    sb[group][threadIdx.x] = gb;
    __syncthreads();
    if (group != 0 || c >= C) return;
    float tw = 0.f, tb = 0.f;
    for (int k = 0; k < kColumnRowGroups; ++k) {
        tw += sw[k][threadIdx.x];
        tb += sb[k][threadIdx.x];
    }
    dw[c] += tw;
    if (db) db[c] += tb;
}

template <typename Xhat>
void launch_norm_column_grads(float* dw, float* db, const float* dout, Xhat xhat, int N, int C) {
    const dim3 block(32, kColumnRowGroups), grid((C + 31) / 32);
    norm_column_grads<<<grid, block>>>(dw, db, dout, xhat, N, C);
}

}  // namespace meshlm::kernels::cuda

// LayerNorm on the GPU, kernels.h's contract (cpu/layernorm.cpp has the math):
//   forward:  one block per row: mean, then the biased variance (two passes, as the CPU does),
//             out = (x - mean) * rstd * w (+ b); saves mean and rstd.
//   backward: dx += rstd * (dxhat - mean_c(dxhat) - xhat * mean_c(dxhat * xhat)), dxhat = dy w,
//             one block per row; dw, db += column sums (norm_columns.cuh, no atomics).
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/norm_columns.cuh"
#include "meshlm/kernels/cuda/reduce.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* x,
                                         const float* w, const float* b, int C, float eps) {
    const std::size_t row = blockIdx.x;
    const float* xr = x + row * C;
    float* yr = out + row * C;
    float s = 0.f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) s += xr[c];
    const float m = block_sum(s) / C;
    float v = 0.f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) v += (xr[c] - m) * (xr[c] - m);
    const float r = 1.f / sqrtf(block_sum(v) / C + eps);
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        const float y = (xr[c] - m) * r * w[c];
        yr[c] = b ? y + b[c] : y;
    }
    if (threadIdx.x == 0) {
        mean[row] = m;
        rstd[row] = r;
    }
}

__global__ void layernorm_backward_dx(float* dx, const float* dout, const float* x, const float* w,
                                      const float* mean, const float* rstd, int C) {
    const std::size_t row = blockIdx.x;
    const float* xr = x + row * C;
    const float* g = dout + row * C;
    const float m = mean[row], r = rstd[row];
    float s1 = 0.f, s2 = 0.f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        const float dxhat = g[c] * w[c];
        s1 += dxhat;
        s2 += dxhat * (xr[c] - m) * r;
    }
    const float a = block_sum(s1) / C;
    const float bb = block_sum(s2) / C;
    float* dxr = dx + row * C;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        const float xhat = (xr[c] - m) * r;
        dxr[c] += r * (g[c] * w[c] - a - xhat * bb);
    }
}

struct LayerNormXhat {
    const float *x, *mean, *rstd;
    int C;
    __device__ float operator()(int n, int c) const {
        return (x[static_cast<std::size_t>(n) * C + c] - mean[n]) * rstd[n];
    }
};

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, int N, int C, float eps) {
    if (N == 0 || C == 0) return;
    layernorm_forward_kernel<<<N, kThreads>>>(out, mean, rstd, x, w, b, C, eps);
    MESHLM_CUDA_LAUNCHED();
}

void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                        const float* w, const float* mean, const float* rstd, int N, int C) {
    if (N == 0 || C == 0) return;
    layernorm_backward_dx<<<N, kThreads>>>(dx, dout, x, w, mean, rstd, C);
    MESHLM_CUDA_LAUNCHED();
    launch_norm_column_grads(dw, db, dout, LayerNormXhat{x, mean, rstd, C}, N, C);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

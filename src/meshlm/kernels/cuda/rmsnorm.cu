// RMSNorm on the GPU, kernels.h's contract (cpu/rmsnorm.cpp has the math):
//   forward:  one block per row: rstd = 1 / sqrt(mean_c(x^2) + eps), out = x rstd w (+ b).
//   backward: dx += rstd * (dxhat - xhat * mean_c(dxhat * xhat)), dxhat = dy w, one block per
//             row; dw, db += column sums (norm_columns.cuh, no atomics).
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/norm_columns.cuh"
#include "meshlm/kernels/cuda/reduce.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void rmsnorm_forward_kernel(float* out, float* rstd, const float* x, const float* w,
                                       const float* b, int C, float eps) {
    const std::size_t row = blockIdx.x;
    const float* xr = x + row * C;
    float* yr = out + row * C;
    float ss = 0.f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) ss += xr[c] * xr[c];
    const float r = 1.f / sqrtf(block_sum(ss) / C + eps);
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        const float y = xr[c] * r * w[c];
        yr[c] = b ? y + b[c] : y;
    }
    if (threadIdx.x == 0) rstd[row] = r;
}

__global__ void rmsnorm_backward_dx(float* dx, const float* dout, const float* x, const float* w,
                                    const float* rstd, int C) {
    const std::size_t row = blockIdx.x;
    const float* xr = x + row * C;
    const float* g = dout + row * C;
    const float r = rstd[row];
    float s = 0.f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) s += g[c] * w[c] * xr[c] * r;
    const float a = block_sum(s) / C;
    float* dxr = dx + row * C;
    for (int c = threadIdx.x; c < C; c += blockDim.x) dxr[c] += r * (g[c] * w[c] - xr[c] * r * a);
}

struct RmsNormXhat {
    const float *x, *rstd;
    int C;
    __device__ float operator()(int n, int c) const {
        return x[static_cast<std::size_t>(n) * C + c] * rstd[n];
    }
};

}  // namespace

void rmsnorm_forward(float* out, float* rstd, const float* x, const float* w, const float* b, int N,
                     int C, float eps) {
    if (N == 0 || C == 0) return;
    rmsnorm_forward_kernel<<<N, kThreads>>>(out, rstd, x, w, b, C, eps);
    MESHLM_CUDA_LAUNCHED();
}

void rmsnorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                      const float* w, const float* rstd, int N, int C) {
    if (N == 0 || C == 0) return;
    rmsnorm_backward_dx<<<N, kThreads>>>(dx, dout, x, w, rstd, C);
    MESHLM_CUDA_LAUNCHED();
    launch_norm_column_grads(dw, db, dout, RmsNormXhat{x, rstd, C}, N, C);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

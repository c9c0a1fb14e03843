// RMSNorm without gains over each head of q and k on the GPU, kernels.h's qk_norm_forward /
// _backward (cpu/qk_norm.cpp has the math), in place on rows of stride ld:
//   forward:  rstd = 1 / sqrt(mean_d(x^2) + eps) per (row, head); x <- xhat = x rstd
//   backward: dx <- rstd (dx - xhat mean_d(dx xhat))
// One warp per (row, head), its sum a fixed shuffle tree: deterministic.
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 256, kWarps = kThreads / 32;

// The warp's (row, head) units: every lane of a warp loops the same times (the shuffles need
// the whole warp).
__global__ void qk_norm_forward_kernel(float* x, int ld, float* rstd, int heads, int D, float eps,
                                       std::size_t units) {
    const int lane = threadIdx.x % 32;
    for (std::size_t u = blockIdx.x * std::size_t{kWarps} + threadIdx.x / 32; u < units;
         u += std::size_t{gridDim.x} * kWarps) {
        float* xr = x + u / heads * ld + u % heads * D;
        float ss = 0.f;
        for (int d = lane; d < D; d += 32) ss += xr[d] * xr[d];
        const float r = 1.f / sqrtf(warp_reduce(ss, SumOp{}) / D + eps);
        for (int d = lane; d < D; d += 32) xr[d] *= r;
        if (rstd && lane == 0) rstd[u] = r;
    }
}

__global__ void qk_norm_backward_kernel(float* dx, int ld, const float* xhat, int ldx,
                                        const float* rstd, int heads, int D, std::size_t units) {
    const int lane = threadIdx.x % 32;
    for (std::size_t u = blockIdx.x * std::size_t{kWarps} + threadIdx.x / 32; u < units;
         u += std::size_t{gridDim.x} * kWarps) {
        float* g = dx + u / heads * ld + u % heads * D;
        const float* y = xhat + u / heads * ldx + u % heads * D;
        float dot = 0.f;
        for (int d = lane; d < D; d += 32) dot += g[d] * y[d];
        const float m = warp_reduce(dot, SumOp{}) / D, r = rstd[u];
        for (int d = lane; d < D; d += 32) g[d] = r * (g[d] - y[d] * m);
    }
}

}  // namespace

void qk_norm_forward(float* x, int ld, float* rstd, int N, int heads, int D, float eps) {
    const std::size_t units = static_cast<std::size_t>(N) * heads;
    if (units == 0 || D == 0) return;
    qk_norm_forward_kernel<<<grid_for(units, kWarps), kThreads>>>(x, ld, rstd, heads, D, eps,
                                                                  units);
    MESHLM_CUDA_LAUNCHED();
}

void qk_norm_backward(float* dx, int ld, const float* xhat, int ldx, const float* rstd, int N,
                      int heads, int D) {
    const std::size_t units = static_cast<std::size_t>(N) * heads;
    if (units == 0 || D == 0) return;
    qk_norm_backward_kernel<<<grid_for(units, kWarps), kThreads>>>(dx, ld, xhat, ldx, rstd, heads,
                                                                   D, units);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

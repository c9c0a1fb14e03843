// The residual adds on the GPU, kernels.h's residual_forward (out = a + b) and bias_residual
// (out = ((out + b1) + b2) + r): the CPU's bits (the same IEEE adds in the same order). out may
// be an input: each element is read before it is written, by one thread.
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void residual_kernel(float* out, const float* a, const float* b, std::size_t n) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x)
        out[i] = a[i] + b[i];
}

// out = ((out + b1) + b2) + r, element i at column i % C; the absent biases are skipped.
__global__ void bias_residual_kernel(float* out, const float* b1, const float* b2, const float* r,
                                     std::size_t n, int C) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x) {
        float o = out[i];
        if (b1) o = o + b1[i % C];
        if (b2) o = o + b2[i % C];
        out[i] = o + r[i];
    }
}

}  // namespace

void bias_residual(float* out, const float* b1, const float* b2, const float* r, int N, int C) {
    const std::size_t n = static_cast<std::size_t>(N) * C;
    if (n == 0) return;
    if (!b1) b1 = b2, b2 = nullptr;  // one present bias is b1 (the CPU's order)
    bias_residual_kernel<<<grid_for(n, kThreads), kThreads>>>(out, b1, b2, r, n, C);
    MESHLM_CUDA_LAUNCHED();
}

void residual_forward(float* out, const float* a, const float* b, std::size_t n) {
    if (n == 0) return;
    residual_kernel<<<grid_for(n, kThreads), kThreads>>>(out, a, b, n);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

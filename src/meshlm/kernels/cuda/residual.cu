// The residual add on the GPU, kernels.h's residual_forward: out = a + b, the CPU's bits (one
// IEEE add). out may be a or b: each element is read before it is written, by one thread.
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

}  // namespace

void residual_forward(float* out, const float* a, const float* b, std::size_t n) {
    if (n == 0) return;
    residual_kernel<<<grid_for(n, kThreads), kThreads>>>(out, a, b, n);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

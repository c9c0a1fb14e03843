// One Lion step on the GPU, kernels.h's contract (cpu/lion.cpp), element-wise with the CPU's
// expressions. Not bitwise: either compiler may fuse a product and a sum into an FMA (GCC's
// -ffp-contract=fast, nvcc's --fmad=true), not necessarily the same ones: m and p agree to an
// ulp or two, and u = sign(c) differs only where c is within rounding of 0.
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void lion_kernel(float* p, const float* g, float* m, std::size_t n, float lr,
                            float beta1, float beta2, float decay, float grad_scale) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x) {
        const float gi = g[i] * grad_scale, mi = m[i];
        const float c = beta1 * mi + (1.f - beta1) * gi;
        const float u = static_cast<float>((c > 0.f) - (c < 0.f));  // sign(0) = 0
        m[i] = beta2 * mi + (1.f - beta2) * gi;
        p[i] = p[i] * decay - lr * u;
    }
}

}  // namespace

void lion(float* p, const float* g, float* m, std::size_t n, float lr, float beta1, float beta2,
          float weight_decay, float grad_scale) {
    if (n == 0) return;
    lion_kernel<<<grid_for(n, kThreads), kThreads>>>(p, g, m, n, lr, beta1, beta2,
                                                     1.f - lr * weight_decay, grad_scale);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

// One AdamW step on the GPU, kernels.h's contract (cpu/adamw.cpp): the bias corrections are
// computed on the host exactly as the CPU computes them, the update element-wise.
#include <cmath>

#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, std::size_t n,
                             float beta1, float beta2, float eps, float step_size, float decay,
                             float bc2_sqrt, float grad_scale) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x) {
        const float gi = g[i] * grad_scale;
        const float mi = beta1 * m[i] + (1.f - beta1) * gi;
        const float vi = beta2 * v[i] + (1.f - beta2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] = p[i] * decay - step_size * mi / (sqrtf(vi) / bc2_sqrt + eps);
    }
}

}  // namespace

void adamw(float* p, const float* g, float* m, float* v, std::size_t n, float lr, float beta1,
           float beta2, float eps, float weight_decay, long step, float grad_scale) {
    if (n == 0) return;
    const float bc1 = 1.f - static_cast<float>(std::pow(beta1, static_cast<double>(step)));
    const float bc2_sqrt =
        static_cast<float>(std::sqrt(1.0 - std::pow(beta2, static_cast<double>(step))));
    adamw_kernel<<<grid_for(n, kThreads), kThreads>>>(
        p, g, m, v, n, beta1, beta2, eps, lr / bc1, 1.f - lr * weight_decay, bc2_sqrt, grad_scale);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

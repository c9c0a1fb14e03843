// Adafactor's full-moment passes on the GPU, kernels.h's adafactor_moment / adafactor_apply
// (cpu/adafactor.cpp), with the CPU's expressions. Not bitwise: either compiler may fuse a
// product and a sum into an FMA (GCC's -ffp-contract=fast, nvcc's --fmad=true), not always the
// same ones, so v and p agree to an ulp or two; sqrtf and '/' are IEEE-correct on both (no
// fast-math). The moment's sum of u^2 is a deterministic double sum (sum_f64.cuh).
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"
#include "meshlm/kernels/cuda/sum_f64.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void moment_kernel(double* partials, float* v, const float* g, std::size_t n, float beta,
                              float eps) {
    double acc = 0;
    for (std::size_t i = blockIdx.x * std::size_t{kSumThreads} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * kSumThreads) {
        const float gi = g[i];
        const float vi = beta * v[i] + (1.f - beta) * (gi * gi + eps);
        v[i] = vi;
        const float u = gi / sqrtf(vi);
        acc += static_cast<double>(u * u);
    }
    acc = block_sum_f64(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

__global__ void apply_kernel(float* p, const float* g, const float* v, std::size_t n, float step,
                             float decay) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x)
        p[i] = p[i] * decay - step * (g[i] / sqrtf(v[i]));
}

}  // namespace

double adafactor_moment(float* v, const float* g, std::size_t n, float beta, float eps) {
    if (n == 0) return 0;
    const unsigned blocks = sum_blocks(n);
    DeviceDoubles partials(blocks);
    moment_kernel<<<blocks, kSumThreads>>>(partials.data(), v, g, n, beta, eps);
    MESHLM_CUDA_LAUNCHED();
    return sum_to_host(partials.data(), blocks);
}

void adafactor_apply(float* p, const float* g, const float* v, std::size_t n, float step,
                     float decay) {
    if (n == 0) return;
    apply_kernel<<<grid_for(n, kThreads), kThreads>>>(p, g, v, n, step, decay);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

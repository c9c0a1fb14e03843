// The gradient norm and clipping on the GPU, kernels.h's sum_squares / scale / clamp
// (cpu/reduce.cpp). scale and clamp give the CPU's bits; sum_squares sums the float squares in
// double (the CPU in float blocks of 1024, then double), so the two agree to about 1e-7 relative.
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"
#include "meshlm/kernels/cuda/sum_f64.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void sum_squares_kernel(double* partials, const float* x, std::size_t n) {
    double acc = 0;
    for (std::size_t i = blockIdx.x * std::size_t{kSumThreads} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * kSumThreads)
        acc += static_cast<double>(x[i] * x[i]);
    acc = block_sum_f64(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

__global__ void scale_kernel(float* x, float s, std::size_t n) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x)
        x[i] *= s;
}

// std::min(std::max(x, -limit), limit) spelled out: the CPU's comparisons, so a NaN stays NaN
// and -0 stays -0 (fminf / fmaxf would drop a NaN).
__global__ void clamp_kernel(float* x, float limit, std::size_t n) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x) {
        const float lo = x[i] < -limit ? -limit : x[i];
        x[i] = limit < lo ? limit : lo;
    }
}

}  // namespace

double sum_squares(const float* x, std::size_t n) {
    if (n == 0) return 0;
    const unsigned blocks = sum_blocks(n);
    DeviceDoubles partials(blocks);
    sum_squares_kernel<<<blocks, kSumThreads>>>(partials.data(), x, n);
    MESHLM_CUDA_LAUNCHED();
    return sum_to_host(partials.data(), blocks);
}

void scale(float* x, float s, std::size_t n) {
    if (n == 0) return;
    scale_kernel<<<grid_for(n, kThreads), kThreads>>>(x, s, n);
    MESHLM_CUDA_LAUNCHED();
}

void clamp(float* x, float limit, std::size_t n) {
    if (n == 0) return;
    clamp_kernel<<<grid_for(n, kThreads), kThreads>>>(x, limit, n);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

// Positions added to the embeddings on the GPU, kernels.h's contracts (cpu/positions.cpp): a
// bf16 run's learned positions (the CPU's bits) and the scaled sinusoids. The scale's gradient
// is one block's fixed-order double sum (sum_f64.cuh), so it agrees with the CPU's row-order
// sum to about 1e-7 relative.
#include "meshlm/kernels/cuda/bf16.cuh"
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"
#include "meshlm/kernels/cuda/sum_f64.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 256;

__device__ inline std::size_t position_of(const int32_t* pos0, std::size_t n, int T) {
    return static_cast<std::size_t>((pos0 ? pos0[n / T] : 0) + static_cast<int>(n % T));
}

__global__ void position_bf16_kernel(float* out, const float* wpe, int T, int C, std::size_t n) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x) {
        const std::size_t row = i / C;
        out[i] += round_bf16(wpe[(row % T) * C + i % C]);
    }
}

__global__ void sinusoid_forward_kernel(float* out, const float* table, const float* scale,
                                        const int32_t* pos0, int T, int C, bool round_scale,
                                        std::size_t n) {
    const float s = round_scale ? round_bf16(*scale) : *scale;
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x)
        out[i] += s * table[position_of(pos0, i / C, T) * C + i % C];
}

// One block: thread t strides the elements in order, then one fixed tree.
__global__ void sinusoid_backward_kernel(float* dscale, const float* dout, const float* table,
                                         const int32_t* pos0, int T, int C, std::size_t n) {
    double acc = 0;
    for (std::size_t i = threadIdx.x; i < n; i += kSumThreads)
        acc += static_cast<double>(dout[i]) * table[position_of(pos0, i / C, T) * C + i % C];
    acc = block_sum_f64(acc);
    if (threadIdx.x == 0) *dscale += static_cast<float>(acc);
}

}  // namespace

void position_embedding_forward_bf16(float* out, const float* wpe, int N, int T, int C) {
    const std::size_t n = static_cast<std::size_t>(N) * C;
    if (n == 0) return;
    position_bf16_kernel<<<grid_for(n, kThreads), kThreads>>>(out, wpe, T, C, n);
    MESHLM_CUDA_LAUNCHED();
}

void sinusoid_position_forward(float* out, const float* table, const float* scale,
                               const int32_t* pos0, int N, int T, int C, bool round_scale) {
    const std::size_t n = static_cast<std::size_t>(N) * C;
    if (n == 0) return;
    sinusoid_forward_kernel<<<grid_for(n, kThreads), kThreads>>>(out, table, scale, pos0, T, C,
                                                                 round_scale, n);
    MESHLM_CUDA_LAUNCHED();
}

void sinusoid_position_backward(float* dscale, const float* dout, const float* table,
                                const int32_t* pos0, int N, int T, int C) {
    const std::size_t n = static_cast<std::size_t>(N) * C;
    if (n == 0) return;
    sinusoid_backward_kernel<<<1, kSumThreads>>>(dscale, dout, table, pos0, T, C, n);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

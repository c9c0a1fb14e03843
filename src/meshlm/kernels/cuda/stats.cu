// Host-read sums on the GPU, kernels.h's sum_f64, abs_sum_rows and attention_score_abs_sum
// (cpu/reduce.cpp, cpu/attention_stats.cpp): sums in double over fixed
// trees (sum_f64.cuh), so they agree with the CPU's to about 1e-7 relative.
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/sum_f64.cuh"

namespace meshlm::kernels::cuda {

namespace {

__global__ void sum_kernel(double* partials, const float* x, std::size_t n) {
    double acc = 0;
    for (std::size_t i = blockIdx.x * std::size_t{kSumThreads} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * kSumThreads)
        acc += x[i];
    acc = block_sum_f64(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

__global__ void abs_sum_kernel(double* partials, const float* x, int rows, int width, int ld) {
    const std::size_t n = static_cast<std::size_t>(rows) * width;
    double acc = 0;
    for (std::size_t i = blockIdx.x * std::size_t{kSumThreads} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * kSumThreads)
        acc += fabsf(x[(i / width) * ld + i % width]);
    acc = block_sum_f64(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

// Block per (b, h, i) query row (grid-stride), a thread per key j: |scale q_i . k_j|.
__global__ void score_abs_sum_kernel(double* partials, const float* qkv, int B, int T, int H,
                                     int Hkv, int D, float scale) {
    const int W = (H + 2 * Hkv) * D, G = H / Hkv;
    const std::size_t rows = static_cast<std::size_t>(B) * H * T;
    double acc = 0;
    for (std::size_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const int i = static_cast<int>(r % T), h = static_cast<int>(r / T % H);
        const std::size_t b = r / (static_cast<std::size_t>(T) * H);
        const float* q = qkv + (b * T + i) * W + static_cast<std::size_t>(h) * D;
        for (int j = threadIdx.x; j < T; j += kSumThreads) {
            const float* k = qkv + (b * T + j) * W + static_cast<std::size_t>(H + h / G) * D;
            float dot = 0.f;
            for (int c = 0; c < D; ++c) dot += q[c] * k[c];
            acc += fabsf(scale * dot);
        }
    }
    acc = block_sum_f64(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

}  // namespace

double sum_f64(const float* x, std::size_t n) {
    if (n == 0) return 0;
    const unsigned blocks = sum_blocks(n);
    DeviceDoubles partials(blocks);
    sum_kernel<<<blocks, kSumThreads>>>(partials.data(), x, n);
    MESHLM_CUDA_LAUNCHED();
    return sum_to_host(partials.data(), blocks);
}

double abs_sum_rows(const float* x, int rows, int width, int ld) {
    const std::size_t n = static_cast<std::size_t>(rows) * width;
    if (n == 0) return 0;
    const unsigned blocks = sum_blocks(n);
    DeviceDoubles partials(blocks);
    abs_sum_kernel<<<blocks, kSumThreads>>>(partials.data(), x, rows, width, ld);
    MESHLM_CUDA_LAUNCHED();
    return sum_to_host(partials.data(), blocks);
}

double attention_score_abs_sum(const float* qkv, int B, int T, int H, int Hkv, int D, float scale) {
    const std::size_t rows = static_cast<std::size_t>(B) * H * T;
    if (rows == 0) return 0;
    const unsigned blocks = rows < kSumBlocks ? static_cast<unsigned>(rows) : kSumBlocks;
    DeviceDoubles partials(blocks);
    score_abs_sum_kernel<<<blocks, kSumThreads>>>(partials.data(), qkv, B, T, H, Hkv, D, scale);
    MESHLM_CUDA_LAUNCHED();
    return sum_to_host(partials.data(), blocks);
}

}  // namespace meshlm::kernels::cuda

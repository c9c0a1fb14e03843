// Adafactor's factored statistics and the update's factors of one tensor on the GPU, kernels.h's
// adafactor_factored_scales (cpu/adafactor.cpp has the CPU's loop). One block: each thread
// decays its statistics, the row and column means are fixed-order double trees
// (sum_f64.cuh), then each thread writes its factors. The statistics stay in GPU memory; only
// the means (from the sums the optimizer adds over the ranks on the host) come over.
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/sum_f64.cuh"

namespace meshlm::kernels::cuda {

namespace {

__global__ void scales_kernel(float* stats, float* scales, const float* means, std::int64_t R,
                              std::int64_t C, float beta) {
    __shared__ double mean[2];
    double part[2] = {0, 0};
    for (std::int64_t i = threadIdx.x; i < R + C; i += kSumThreads) {
        const float s = beta * stats[i] + (1.f - beta) * means[i];
        stats[i] = s;
        part[i < R ? 0 : 1] += s;
    }
    const double r_sum = block_sum_f64(part[0]);
    if (threadIdx.x == 0) mean[0] = r_sum / static_cast<double>(R);
    const double c_sum = block_sum_f64(part[1]);
    if (threadIdx.x == 0) mean[1] = c_sum / static_cast<double>(C);
    __syncthreads();
    const float rm = R > C ? 1.f : static_cast<float>(mean[0]);
    const float cm = R > C ? static_cast<float>(mean[1]) : 1.f;
    for (std::int64_t i = threadIdx.x; i < R + C; i += kSumThreads)
        scales[i] = 1.f / sqrtf(stats[i] / (i < R ? rm : cm));
}

}  // namespace

void adafactor_factored_scales(float* stats, float* scales, const float* means, std::int64_t R,
                               std::int64_t C, float beta) {
    if (R + C == 0) return;
    scales_kernel<<<1, kSumThreads>>>(stats, scales, means, R, C, beta);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

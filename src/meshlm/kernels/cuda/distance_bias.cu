// T5's bias table resolved per distance and its gradient folded back on the GPU (kernels.h's
// distance_bias_expand / _fold). The fold gives thread (h, b) bucket b of head h: it adds the
// distances of its bucket in increasing d, the CPU's order, so both give the same bits.
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void expand_kernel(float* dist, const float* table, const int32_t* buckets, int H, int L,
                              int NB) {
    const std::size_t e = static_cast<std::size_t>(blockIdx.x) * kThreads + threadIdx.x;
    if (e >= static_cast<std::size_t>(H) * L) return;
    const int h = static_cast<int>(e / L), d = static_cast<int>(e % L);
    dist[e] = table[static_cast<std::size_t>(h) * NB + buckets[d]];
}

__global__ void fold_kernel(float* grad_table, const float* grad, const int32_t* buckets, int H,
                            int L, int NB) {
    const int e = blockIdx.x * kThreads + threadIdx.x;
    if (e >= H * NB) return;
    const int h = e / NB, b = e % NB;
    const float* g = grad + static_cast<std::size_t>(h) * L;
    float s = grad_table[e];
    for (int d = 0; d < L; ++d)
        if (buckets[d] == b) s += g[d];
    grad_table[e] = s;
}

}  // namespace

void distance_bias_expand(float* dist, const float* table, const int32_t* buckets, int H, int L,
                          int NB) {
    const std::size_t n = static_cast<std::size_t>(H) * L;
    if (n == 0) return;
    expand_kernel<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads>>>(
        dist, table, buckets, H, L, NB);
    MESHLM_CUDA_LAUNCHED();
}

void distance_bias_fold(float* grad_table, const float* grad, const int32_t* buckets, int H, int L,
                        int NB) {
    if (H == 0 || NB == 0) return;
    fold_kernel<<<(H * NB + kThreads - 1) / kThreads, kThreads>>>(grad_table, grad, buckets, H, L,
                                                                  NB);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

// The vocabulary-parallel cross-entropy's phases on the GPU, vocab_parallel.h's contracts
// (cpu/vocab_parallel.cpp): one block per row over the rank's Vl logits at row stride ldv. The
// caller all-reduces row_max and stats between the phases.
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 512;

__global__ void ce_row_max_kernel(float* row_max, const float* logits, const int32_t* targets,
                                  int Vl, int ldv) {
    const std::size_t row = blockIdx.x;
    if (targets[row] < 0) {  // the whole block takes this branch
        if (threadIdx.x == 0) row_max[row] = 0.f;
        return;
    }
    const float* x = logits + row * ldv;
    float mx = -INFINITY;
    for (int v = threadIdx.x; v < Vl; v += blockDim.x) mx = fmaxf(mx, x[v]);
    mx = block_max(mx);
    if (threadIdx.x == 0) row_max[row] = mx;
}

__global__ void ce_row_sums_kernel(float* stats, float* logits, const int32_t* targets,
                                   const float* row_max, int v0, int Vl, int ldv, bool store) {
    const std::size_t row = blockIdx.x;
    if (targets[row] < 0) {
        if (threadIdx.x == 0) stats[2 * row] = stats[2 * row + 1] = 0.f;
        return;
    }
    float* x = logits + row * ldv;
    const int t = targets[row] - v0;
    const float xt = t >= 0 && t < Vl ? x[t] : 0.f;
    __syncthreads();  // every thread has read x[t] before any exp overwrites it
    const float mx = row_max[row];
    float s = 0.f;
    for (int v = threadIdx.x; v < Vl; v += blockDim.x) {
        const float e = expf(x[v] - mx);
        if (store) x[v] = e;
        s += e;
    }
    s = block_sum(s);
    if (threadIdx.x == 0) stats[2 * row] = s, stats[2 * row + 1] = xt;
}

__global__ void ce_finish_kernel(float* logits, float* losses, const int32_t* targets,
                                 const float* row_max, const float* stats, int v0, int Vl, int ldv,
                                 float scale, float z_loss) {
    const std::size_t row = blockIdx.x;
    float* x = logits + row * ldv;
    const bool grad = scale != 0.f;
    if (grad)
        for (int v = Vl + threadIdx.x; v < ldv; v += blockDim.x) x[v] = 0.f;
    if (targets[row] < 0) {
        if (threadIdx.x == 0) losses[row] = 0.f;
        if (grad)
            for (int v = threadIdx.x; v < Vl; v += blockDim.x) x[v] = 0.f;
        return;
    }
    const float sum = stats[2 * row];
    const float lse = logf(sum) + row_max[row];
    if (threadIdx.x == 0) losses[row] = lse - stats[2 * row + 1];
    if (!grad) return;
    const float k = scale * (1.f + 2.f * z_loss * lse) / sum;
    const int t = targets[row] - v0;
    for (int v = threadIdx.x; v < Vl; v += blockDim.x) {
        const float d = x[v] * k;
        x[v] = v == t ? d - scale : d;
    }
}

}  // namespace

void ce_row_max(float* row_max, const float* logits, const int32_t* targets, int N, int Vl,
                int ldv) {
    if (N == 0) return;
    ce_row_max_kernel<<<N, kThreads>>>(row_max, logits, targets, Vl, ldv);
    MESHLM_CUDA_LAUNCHED();
}

void ce_row_sums(float* stats, float* logits, const int32_t* targets, const float* row_max, int v0,
                 int N, int Vl, int ldv, bool store) {
    if (N == 0) return;
    ce_row_sums_kernel<<<N, kThreads>>>(stats, logits, targets, row_max, v0, Vl, ldv, store);
    MESHLM_CUDA_LAUNCHED();
}

void ce_finish(float* logits, float* losses, const int32_t* targets, const float* row_max,
               const float* stats, int v0, int N, int Vl, int ldv, float dlogits_scale,
               float z_loss) {
    if (N == 0) return;
    ce_finish_kernel<<<N, kThreads>>>(logits, losses, targets, row_max, stats, v0, Vl, ldv,
                                      dlogits_scale, z_loss);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

// Fused softmax + cross-entropy on the GPU, kernels.h's contract (cpu/cross_entropy.cpp):
//   lse = logsumexp(x), loss = lse - x[t]
//   dx  = scale * ((1 + 2 z lse) softmax(x) - onehot(t)), over x in place
// One block per row: max, then the sum of exps (written over the logits when a gradient is
// wanted), then the scaling; no [N, V] probability buffer exists. Rows with t < 0 get loss 0
// and a zero gradient.
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 512;

__global__ void cross_entropy_kernel(float* logits, float* losses, const int32_t* targets, int V,
                                     float scale, float z_loss) {
    const std::size_t row = blockIdx.x;
    float* x = logits + row * V;
    const int t = targets[row];
    const bool grad = scale != 0.f;
    if (t < 0) {  // the whole block takes this branch
        if (threadIdx.x == 0) losses[row] = 0.f;
        if (grad)
            for (int v = threadIdx.x; v < V; v += blockDim.x) x[v] = 0.f;
        return;
    }
    const float xt = x[t];  // read before any thread overwrites the row
    float mx = -INFINITY;
    for (int v = threadIdx.x; v < V; v += blockDim.x) mx = fmaxf(mx, x[v]);
    mx = block_max(mx);
    float s = 0.f;
    for (int v = threadIdx.x; v < V; v += blockDim.x) {
        const float e = expf(x[v] - mx);
        if (grad) x[v] = e;
        s += e;
    }
    const float sum = block_sum(s);
    const float lse = logf(sum) + mx;
    if (threadIdx.x == 0) losses[row] = lse - xt;
    if (!grad) return;
    const float k = scale * (1.f + 2.f * z_loss * lse) / sum;
    for (int v = threadIdx.x; v < V; v += blockDim.x) {
        const float d = x[v] * k;  // each thread rescales the exps it wrote
        x[v] = v == t ? d - scale : d;
    }
}

}  // namespace

void softmax_cross_entropy(float* logits, float* losses, const int32_t* targets, int N, int V,
                           float dlogits_scale, float z_loss) {
    if (N == 0) return;
    cross_entropy_kernel<<<N, kThreads>>>(logits, losses, targets, V, dlogits_scale, z_loss);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

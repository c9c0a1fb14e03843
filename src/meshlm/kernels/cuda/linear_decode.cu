// Linear layers for decoding on the GPU, kernels.h's linear_decode / linear_decode_bf16:
// y[M, O] = x[M, I] W[O, I]^T + bias[O] for few rows M. Bound by reading W, so one warp owns an
// output o and reads its weight row once per kRows rows of x: lanes split I (coalesced), each
// keeps kRows accumulators, a shuffle tree sums them. A bf16 weight is the upper half of an
// fp32 (widened exactly); products and sums are fp32. Every y element is one warp's fixed-order
// sum whatever M, so a row's result does not depend on what it is batched with.
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 256, kWarps = kThreads / 32, kRows = 4;

__device__ inline float widen(float w) {
    return w;
}
__device__ inline float widen(std::uint16_t w) {
    return __uint_as_float(static_cast<std::uint32_t>(w) << 16);
}

template <typename WT>
__global__ void linear_decode_kernel(float* y, const float* x, const WT* W, const float* bias,
                                     int M, int I, int O) {
    const int o = blockIdx.x * kWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (o >= O) return;  // the whole warp: no shuffle is left waiting
    const WT* wr = W + static_cast<std::size_t>(o) * I;
    for (int m0 = 0; m0 < M; m0 += kRows) {
        float acc[kRows] = {};
        for (int i = lane; i < I; i += 32) {
            const float w = widen(wr[i]);
#pragma unroll
            for (int r = 0; r < kRows; ++r)
                if (m0 + r < M) acc[r] += w * x[static_cast<std::size_t>(m0 + r) * I + i];
        }
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
            const float s = warp_reduce(acc[r], SumOp{});
            if (lane == 0 && m0 + r < M)
                y[static_cast<std::size_t>(m0 + r) * O + o] = s + (bias ? bias[o] : 0.f);
        }
    }
}

template <typename WT>
void linear_decode_any(float* y, const float* x, const WT* W, const float* bias, int M, int I,
                       int O) {
    if (M == 0 || O == 0) return;
    linear_decode_kernel<WT><<<(O + kWarps - 1) / kWarps, kThreads>>>(y, x, W, bias, M, I, O);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace

void linear_decode(float* y, const float* x, const float* W, const float* bias, int M, int I,
                   int O) {
    linear_decode_any(y, x, W, bias, M, I, O);
}

void linear_decode_bf16(float* y, const float* x, const std::uint16_t* W, const float* bias, int M,
                        int I, int O) {
    linear_decode_any(y, x, W, bias, M, I, O);
}

}  // namespace meshlm::kernels::cuda

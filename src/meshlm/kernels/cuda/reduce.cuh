// Warp and block reductions shared by the row kernels (norms, cross-entropy). A block reduction
// needs blockDim.x a multiple of 32 (at most 1024) and every thread of the block to call it;
// every thread gets the result.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>

namespace meshlm::kernels::cuda {

constexpr unsigned kFullMask = 0xffffffffu;

struct SumOp {
    __device__ float operator()(float a, float b) const { return a + b; }
    static constexpr float kIdentity = 0.f;
};
struct MaxOp {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
    static constexpr float kIdentity = -INFINITY;
};

// Over the warp, or over each aligned group of `lanes` (a power of two) lanes of it.
template <int lanes = 32, typename Op>
__device__ inline float warp_reduce(float v, Op op) {
#pragma unroll
    for (int o = lanes / 2; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(kFullMask, v, o));
    return v;
}

template <typename Op>
__device__ inline float block_reduce(float v, Op op) {
    __shared__ float partial[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = warp_reduce(v, op);
    __syncthreads();  // the previous call's readers are done with `partial`
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    return warp_reduce(lane < warps ? partial[lane] : Op::kIdentity, op);
}

__device__ inline float block_sum(float v) {
    return block_reduce(v, SumOp{});
}
__device__ inline float block_max(float v) {
    return block_reduce(v, MaxOp{});
}

// Blocks for n elements at `threads` per block, at most `cap` (grid-stride loops cover the rest).
inline unsigned grid_for(std::size_t n, unsigned threads, unsigned cap = 65535u * 8u) {
    const std::size_t b = (n + threads - 1) / threads;
    return static_cast<unsigned>(b < 1 ? 1 : (b > cap ? cap : b));
}

}  // namespace meshlm::kernels::cuda

// The linear layer on the GPU, kernels.h's contract, composed from cuBLASLt GEMMs (gemm.cpp) and
// one bias kernel:
//   linear_forward:  y = b per row, then y = x W^T + 1 * y   (without b: beta 0)
//   linear_backward: dx = dy W, dW += dy^T x, db += column sums of dy (bias_backward.cu)
//   add_bias:        y += b per row
// The bias adds are exact, so y matches the CPU up to the GEMM's summation order.
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 256;

// y[n, o] = b[o] (kAdd false) or y[n, o] += b[o], element i of y [N, O] at column i % O.
template <bool kAdd>
__global__ void bias_rows(float* y, const float* b, std::size_t n, int O) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x)
        y[i] = kAdd ? y[i] + b[i % O] : b[i % O];
}

template <bool kAdd>
void launch_bias_rows(float* y, const float* b, int N, int O) {
    const std::size_t n = static_cast<std::size_t>(N) * O;
    if (n == 0) return;
    bias_rows<kAdd><<<grid_for(n, kThreads), kThreads>>>(y, b, n, O);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace

void linear_forward(float* y, const float* x, const float* W, const float* bias, int N, int I,
                    int O) {
    if (bias) launch_bias_rows<false>(y, bias, N, O);
    gemm(false, true, N, O, I, 1.f, x, I, W, I, bias ? 1.f : 0.f, y, O);
}

void linear_backward(float* dx, float* dW, float* dbias, const float* dy, const float* x,
                     const float* W, int N, int I, int O) {
    if (dx) gemm(false, false, N, I, O, 1.f, dy, O, W, I, 0.f, dx, I);
    gemm(true, false, O, I, N, 1.f, dy, O, x, I, 1.f, dW, I);
    if (dbias) bias_backward(dbias, dy, N, O);
}

void add_bias(float* y, const float* b, int N, int O) {
    launch_bias_rows<true>(y, b, N, O);
}

}  // namespace meshlm::kernels::cuda

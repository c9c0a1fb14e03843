// Element-wise kernels on the GPU, kernels.h's fill, mul_rows and axpy (cpu/elementwise.cpp):
// fill and mul give the CPU's bits; axpy's multiply-add is contracted to an FMA here as the CPU
// compiler contracts it on FMA machines, so the two agree to the last bit there and to 1 ulp
// elsewhere.
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void fill_kernel(float* x, float value, std::size_t n) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x)
        x[i] = value;
}

__global__ void mul_rows_kernel(float* out, int ldo, const float* a, int lda, const float* b,
                                int ldb, int C, std::size_t n) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x) {
        const std::size_t r = i / C, c = i % C;
        out[r * ldo + c] = a[r * lda + c] * b[r * ldb + c];
    }
}

__global__ void axpy_kernel(float* y, const float* x, float alpha, std::size_t n) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x)
        y[i] += alpha * x[i];
}

}  // namespace

void fill(float* x, float value, std::size_t n) {
    if (n == 0) return;
    fill_kernel<<<grid_for(n, kThreads), kThreads>>>(x, value, n);
    MESHLM_CUDA_LAUNCHED();
}

void mul_rows(float* out, int ldo, const float* a, int lda, const float* b, int ldb, int N, int C) {
    const std::size_t n = static_cast<std::size_t>(N) * C;
    if (n == 0) return;
    mul_rows_kernel<<<grid_for(n, kThreads), kThreads>>>(out, ldo, a, lda, b, ldb, C, n);
    MESHLM_CUDA_LAUNCHED();
}

void axpy(float* y, const float* x, float alpha, std::size_t n) {
    if (n == 0) return;
    axpy_kernel<<<grid_for(n, kThreads), kThreads>>>(y, x, alpha, n);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

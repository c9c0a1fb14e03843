// fp32 <-> bf16 conversions on the GPU, kernels.h's contracts (cpu/bf16.cpp) and the CPU's bits:
// the same integer rounding on the fp32 bits (round to nearest, ties to even, no special case
// for NaN), and widening by a 16-bit shift.
#include <cstdint>

#include "meshlm/kernels/cuda/bf16.cuh"
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 256;

#define MESHLM_GRID_STRIDE(i, n)                                                      \
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < (n); \
         i += std::size_t{gridDim.x} * blockDim.x)

__global__ void to_bf16_kernel(std::uint16_t* out, const float* in, std::size_t n) {
    MESHLM_GRID_STRIDE(i, n) out[i] = bits_bf16(in[i]);
}

__global__ void round_bf16_kernel(float* out, const float* in, std::size_t n) {
    MESHLM_GRID_STRIDE(i, n) out[i] = widen(bits_bf16(in[i]));
}

__global__ void from_bf16_kernel(float* out, const std::uint16_t* in, std::size_t n) {
    MESHLM_GRID_STRIDE(i, n) out[i] = widen(in[i]);
}

// Element i of the dense [rows, cols] output; its source is in[r * ld + c].
__global__ void to_bf16_rows_kernel(std::uint16_t* out, const float* in, int cols, int ld,
                                    std::size_t n) {
    MESHLM_GRID_STRIDE(i, n) {
        const std::size_t r = i / cols, c = i % cols;
        out[i] = bits_bf16(in[r * ld + c]);
    }
}

__global__ void from_bf16_rows_kernel(float* out, const std::uint16_t* in, int cols, int ld,
                                      std::size_t n) {
    MESHLM_GRID_STRIDE(i, n) {
        const std::size_t r = i / cols, c = i % cols;
        out[i] = widen(in[r * ld + c]);
    }
}

// Values [lo, hi) move from bytes 2i to 4i: this pass reads [2 lo, 2 hi) and writes [4 lo, 4 hi),
// apart because lo >= hi / 2, so its threads never see each other's writes.
__global__ void widen_pass_kernel(float* buf, std::size_t lo, std::size_t hi) {
    const auto* in = reinterpret_cast<const std::uint16_t*>(buf);
    MESHLM_GRID_STRIDE(k, hi - lo) {
        const std::size_t i = lo + k;
        buf[i] = widen(in[i]);
    }
}

#undef MESHLM_GRID_STRIDE

}  // namespace

void to_bf16(std::uint16_t* out, const float* in, std::size_t n) {
    if (n == 0) return;
    to_bf16_kernel<<<grid_for(n, kThreads), kThreads>>>(out, in, n);
    MESHLM_CUDA_LAUNCHED();
}

void round_bf16(float* out, const float* in, std::size_t n) {
    if (n == 0) return;
    round_bf16_kernel<<<grid_for(n, kThreads), kThreads>>>(out, in, n);
    MESHLM_CUDA_LAUNCHED();
}

void from_bf16(float* out, const std::uint16_t* in, std::size_t n) {
    if (n == 0) return;
    from_bf16_kernel<<<grid_for(n, kThreads), kThreads>>>(out, in, n);
    MESHLM_CUDA_LAUNCHED();
}

void to_bf16_rows(std::uint16_t* out, const float* in, int rows, int cols, int ld) {
    const std::size_t n = static_cast<std::size_t>(rows) * cols;
    if (n == 0) return;
    to_bf16_rows_kernel<<<grid_for(n, kThreads), kThreads>>>(out, in, cols, ld, n);
    MESHLM_CUDA_LAUNCHED();
}

void from_bf16_rows(float* out, const std::uint16_t* in, int rows, int cols, int ld) {
    const std::size_t n = static_cast<std::size_t>(rows) * cols;
    if (n == 0) return;
    from_bf16_rows_kernel<<<grid_for(n, kThreads), kThreads>>>(out, in, cols, ld, n);
    MESHLM_CUDA_LAUNCHED();
}

// cpu/bf16.cpp's halving passes, one launch each (about log2 n), in stream order; the last
// moves value 0 onto itself.
void from_bf16_in_place(float* buf, std::size_t n) {
    for (std::size_t hi = n; hi > 0;) {
        const std::size_t lo = hi > 1 ? (hi + 1) / 2 : 0;
        widen_pass_kernel<<<grid_for(hi - lo, kThreads), kThreads>>>(buf, lo, hi);
        MESHLM_CUDA_LAUNCHED();
        hi = lo;
    }
}

}  // namespace meshlm::kernels::cuda

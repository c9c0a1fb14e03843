// Inverted dropout on the GPU, kernels.h's contract (cpu/dropout.cpp): x[n, c] *= keep / (1 -
// rate), keep drawn as draw (row0 + n) * C + c of the Philox stream (seed, stream). x is dense,
// so element i = n * C + c is draw row0 * C + i: one thread per Philox block of 4 draws, each
// block computed once. The mask and the product are bitwise the CPU's (philox.cuh).
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/philox.cuh"
#include "meshlm/kernels/cuda/reduce.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 256;

// Blocks first_block .. first_block + blocks - 1 cover draws [x0, x0 + n).
__global__ void dropout_kernel(float* x, std::uint64_t x0, std::uint64_t n,
                               std::uint64_t first_block, std::uint64_t blocks, float rate,
                               float keep, std::uint64_t seed, std::uint64_t stream) {
    for (std::uint64_t k = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; k < blocks;
         k += std::uint64_t{gridDim.x} * blockDim.x) {
        const std::uint64_t block = first_block + k;
        const Philox4 r = philox4x32(block, seed, stream);
        for (int j = 0; j < 4; ++j) {
            const std::uint64_t draw = 4 * block + j;
            if (draw < x0 || draw >= x0 + n) continue;  // the first and last blocks are partial
            x[draw - x0] *= dropout_scale(r.w[j], rate, keep);
        }
    }
}

}  // namespace

void dropout(float* x, int N, int C, float rate, std::uint64_t seed, std::uint64_t stream,
             std::int64_t row0) {
    if (rate == 0.f || N == 0 || C == 0) return;  // rate 0: a bitwise no-op, as on the CPU
    const std::uint64_t x0 = static_cast<std::uint64_t>(row0) * static_cast<std::uint64_t>(C);
    const std::uint64_t n = static_cast<std::uint64_t>(N) * static_cast<std::uint64_t>(C);
    const std::uint64_t first_block = x0 / 4, blocks = (x0 + n - 1) / 4 - first_block + 1;
    dropout_kernel<<<grid_for(blocks, kThreads), kThreads>>>(x, x0, n, first_block, blocks, rate,
                                                             1.f / (1.f - rate), seed, stream);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

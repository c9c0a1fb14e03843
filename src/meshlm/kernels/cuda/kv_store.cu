// A decode pass's keys and values into the KV cache's block pool on the GPU, kernels.h's
// kv_store (cpu/kv_store.cpp): a block per (row, key/value head), a thread per element; copies,
// so the CPU's bits.
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"

namespace meshlm::kernels::cuda {

namespace {

__global__ void kv_store_kernel(float* k_pool, float* v_pool, const float* qkv, int W,
                                const int32_t* tables, int n, const int32_t* pos, int block, int H,
                                int Hkv, int D) {
    const int m = blockIdx.x, h = blockIdx.y, p = pos[m];
    const std::size_t blk =
        static_cast<std::size_t>(tables[static_cast<std::size_t>(m) * n + p / block]);
    const std::size_t at = (blk * Hkv + h) * block * D + static_cast<std::size_t>(p % block) * D;
    const float* row = qkv + static_cast<std::size_t>(m) * W;
    for (int c = threadIdx.x; c < D; c += blockDim.x) {
        k_pool[at + c] = row[static_cast<std::size_t>(H + h) * D + c];
        v_pool[at + c] = row[static_cast<std::size_t>(H + Hkv + h) * D + c];
    }
}

}  // namespace

void kv_store(float* k_pool, float* v_pool, const float* qkv, int W, const int32_t* tables, int n,
              const int32_t* pos, int M, int block, int H, int Hkv, int D) {
    if (M == 0) return;
    kv_store_kernel<<<dim3(M, Hkv), 128>>>(k_pool, v_pool, qkv, W, tables, n, pos, block, H, Hkv,
                                           D);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

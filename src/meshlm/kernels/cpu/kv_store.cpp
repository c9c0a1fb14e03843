// A decode pass's keys and values into the KV cache's block pool (kernels.h's kv_store).
#include <cstddef>
#include <cstring>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {

void kv_store(float* k_pool, float* v_pool, const float* qkv, int W, const std::int32_t* tables,
              int n, const std::int32_t* pos, int M, int blocks, int block, int H, int Hkv, int D) {
    const std::size_t head = static_cast<std::size_t>(block) * D;
    for (int m = 0; m < M; ++m) {
        const int p = pos[m], slot = p / block;
        MESHLM_CHECK(p >= 0 && slot < n, "kv_store: row ", m, "'s position ", p,
                     " is past its table of ", n, " blocks of ", block);
        const std::int32_t blk = tables[static_cast<std::size_t>(m) * n + slot];
        MESHLM_CHECK(blk >= 0 && blk < blocks, "kv_store: row ", m, " names block ", blk,
                     " of a pool of ", blocks);
        const float* row = qkv + static_cast<std::size_t>(m) * W;
        for (int h = 0; h < Hkv; ++h) {
            const std::size_t at = (static_cast<std::size_t>(blk) * Hkv + h) * head +
                                   static_cast<std::size_t>(p % block) * D;
            std::memcpy(k_pool + at, row + static_cast<std::size_t>(H + h) * D, D * sizeof(float));
            std::memcpy(v_pool + at, row + static_cast<std::size_t>(H + Hkv + h) * D,
                        D * sizeof(float));
        }
    }
}

}  // namespace meshlm::kernels

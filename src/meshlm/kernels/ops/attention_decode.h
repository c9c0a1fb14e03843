// One query per row over a KV cache, for decoding (kernels.h's attention_decode and
// attention_paged), over device-tagged views. Row m's query sits at position T - 1 of its
// sequence and attends to every cached position 0..T-1; query head h reads key/value head
// h / (H / Hkv):
//   out[m, h] = softmax(scale q K^T - slope[h] (T - 1 - j)) V    (or heads.act's nonlinearity)
// Shapes (f32 unless said, one device):
//   q [M, W] (W >= H D, head h at columns h D..h D + D);  out [M, H D];  alibi_slopes [H] (opt.)
//   decode: k_cache, v_cache [S, Hkv, Tmax, D]; seq i32 [M] (optional: row m reads sequence m);
//           T in 1..Tmax positions for every row
//   paged:  k_pool, v_pool [num_blocks, Hkv, block, D]; tables i32 [M, blocks per row]: row m's
//           position j is at offset j % block of block tables[m, j / block]; lens i32 [M] >= 1
// H a multiple of Hkv, D <= 256.
//
// kv_store writes each row's key and value heads into a cache before it attends: row m of qkv
// [M, W] holds key head h at columns (H + h) D and value head h at (H + Hkv + h) D; they go to
// position pos[m] % block of block tables[m, pos[m] / block] of k_pool / v_pool [blocks, Hkv,
// block, D] (a dense KV cache [S, Hkv, Tmax, D] is the pool with block = Tmax and tables [M, 1]
// the sequence of each row). tables i32 [M, n], pos i32 [M]; an entry out of range throws on
// the CPU.
#pragma once

#include "meshlm/core/tensor.h"
#include "meshlm/kernels/ops/op_params.h"

namespace meshlm::ops {

struct DecodeHeads {
    int H = 0, Hkv = 0;            // query heads, key/value heads
    float scale = 0.f;             // 0: 1/sqrt(D)
    kernels::AttnActParams act{};  // softmax unless set
    // A learned bias by distance (model.position t5_bias; null: none), on the views' device.
    const kernels::DistanceBias* dist = nullptr;
};

void attention_decode(const Tensor& out, const Tensor& q, const Tensor& k_cache,
                      const Tensor& v_cache, const Tensor& seq, int T, const Tensor& alibi_slopes,
                      const DecodeHeads& heads);
void attention_paged(const Tensor& out, const Tensor& q, const Tensor& k_pool, const Tensor& v_pool,
                     const Tensor& tables, const Tensor& lens, const Tensor& alibi_slopes,
                     const DecodeHeads& heads);

void kv_store(const Tensor& k_pool, const Tensor& v_pool, const Tensor& qkv, const Tensor& tables,
              const Tensor& pos, int H);

}  // namespace meshlm::ops

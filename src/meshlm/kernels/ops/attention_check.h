// The check shared by the attention ops over qkv rows (attention_*, attention_act_*): qkv
// [B, T, (H + 2 Hkv) D] with 1 <= D <= 256 (both backends' per-row tiles), H a positive multiple
// of Hkv, the [B, T, H D] view `o` (out or dout) and the optional [H] ALiBi slopes.
#pragma once

#include "meshlm/kernels/ops/attention.h"
#include "meshlm/kernels/ops/check.h"

namespace meshlm::ops {

struct QkvDims {
    int B, T, D;
};
QkvDims expect_qkv(const char* op, const Tensor& qkv, const Arg& o, const Tensor& alibi_slopes,
                   const AttentionHeads& h);

}  // namespace meshlm::ops

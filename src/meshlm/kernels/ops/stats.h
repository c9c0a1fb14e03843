// Sums read by the host, over device-tagged views, returned as doubles (a CUDA view waits for
// the device): the coordinate check's statistics and logged means, not the training math.
//   sum:                      sum of a 1-D f32 view, in double (in order on the CPU)
//   abs_sum:                  sum of |x| over a 2-D f32 view [rows, width], which may be a
//                             column block of wider rows (Tensor::columns)
//   attention_score_abs_sum:  sum over b, h and every (i, j) pair (future ones too: the seed
//                             measures before the causal mask) of |scale q_i . k_j|, q and k
//                             from qkv [B T, (H + 2 Hkv) D] as the attention ops read it
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

double sum(const Tensor& x);
double abs_sum(const Tensor& x);
double attention_score_abs_sum(const Tensor& qkv, int B, int T, int H, int Hkv, int D, float scale);

}  // namespace meshlm::ops

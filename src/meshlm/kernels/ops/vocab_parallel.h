// The cross-entropy of a vocabulary split across model ranks (vocab_parallel.h's ce_row_*), over
// device-tagged views. Each rank holds the logits of its vocabulary rows [v0, v0 + Vl): logits
// [N, Vl], possibly a column block of wider rows (the padded shard, Tensor::columns). The caller
// all-reduces between the phases (ops never communicate):
//   ce_row_max   row_max [N] = max of each row (0 where targets < 0)   -> all-reduce max
//   ce_row_sums  stats [N, 2] = (sum exp(x - row_max), x[target - v0] when local, else 0)
//                when `store`, the exps overwrite the logits           -> all-reduce sum
//   ce_finish    losses [N] = log(sum) + max - x_target (0 where targets < 0); with
//                dlogits_scale != 0 the stored exps become dlogits_scale * (softmax - onehot +
//                2 z_loss lse softmax) and the padding columns past Vl of each row become 0.
// targets i32 [N]; everything else f32; one device.
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

void ce_row_max(const Tensor& row_max, const Tensor& logits, const Tensor& targets);
void ce_row_sums(const Tensor& stats, const Tensor& logits, const Tensor& targets,
                 const Tensor& row_max, int v0, bool store);
void ce_finish(const Tensor& logits, const Tensor& losses, const Tensor& targets,
               const Tensor& row_max, const Tensor& stats, int v0, float dlogits_scale,
               float z_loss = 0.f);

}  // namespace meshlm::ops

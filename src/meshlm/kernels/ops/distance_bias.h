// T5's bias table resolved per distance, and its gradient folded back (model/t5_bias.h), over
// device-tagged views. With buckets i32 [L] (the bucket of each distance d < L, ascending in d):
//   distance_bias_expand: dist[h, d] = table[h, buckets[d]]
//   distance_bias_fold:   grad_table[h, b] += sum over d with buckets[d] = b of grad[h, d],
//                         added in increasing d (the same bits on every device)
// table, grad_table f32 [H, num_buckets]; dist, grad f32 [H, L]; one device. A bucket outside
// [0, num_buckets) is refused on the CPU (the CUDA kernels do not read the buckets back).
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

void distance_bias_expand(const Tensor& dist, const Tensor& table, const Tensor& buckets);
void distance_bias_fold(const Tensor& grad_table, const Tensor& grad, const Tensor& buckets);

}  // namespace meshlm::ops

// Fused softmax + cross-entropy over the vocabulary on device-tagged views (kernels.h's
// softmax_cross_entropy): losses[n] = -log softmax(logits[n])[targets[n]] (0 where the target is
// < 0). With dlogits_scale != 0 the logits are overwritten by the gradient of
// dlogits_scale * (loss + z_loss * lse^2); no probability matrix is kept.
// Shapes: logits [N, V] f32, losses [N] f32, targets [N] i32, on one device.
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

void softmax_cross_entropy(const Tensor& logits, const Tensor& losses, const Tensor& targets,
                           float dlogits_scale, float z_loss = 0.f);

}  // namespace meshlm::ops

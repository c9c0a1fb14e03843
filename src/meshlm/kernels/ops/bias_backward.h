// A bias's gradient over device-tagged views (kernels.h's bias_backward), accumulating:
//   db[o] += sum_n dy[n, o]
// dy f32 [N, O], db f32 [O], one device. Deterministic on every device (no float atomics).
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

void bias_backward(const Tensor& db, const Tensor& dy);

}  // namespace meshlm::ops

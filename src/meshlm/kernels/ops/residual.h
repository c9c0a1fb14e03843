// The residual add over device-tagged views (kernels.h's residual_forward): out = a + b.
// out, a, b: f32 views of one shape on one device; out may be a or b (in place).
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

void residual_forward(const Tensor& out, const Tensor& a, const Tensor& b);

}  // namespace meshlm::ops

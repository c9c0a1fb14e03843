// One Lion step over device-tagged views (kernels.h's lion, Chen et al. 2023), decoupled weight
// decay:
//   u = sign(b1 m + (1 - b1) g)   (sign(0) = 0);   m = b2 m + (1 - b2) g;   p -= lr (u + wd p)
// p, g, m: f32 views of one shape on one device (a flat shard or one tensor).
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

struct LionStep {
    float lr = 1e-4f, beta1 = 0.9f, beta2 = 0.99f, weight_decay = 0.f;
    float grad_scale = 1.f;  // g enters as grad_scale * g (norm clipping's factor, folded in)
};

void lion(const Tensor& p, const Tensor& g, const Tensor& m, const LionStep& s);

}  // namespace meshlm::ops

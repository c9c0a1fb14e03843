// One AdamW step over device-tagged views (kernels.h's adamw, torch.optim.AdamW's update):
//   p -= lr wd p;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// p, g, m, v: f32 views of one shape on one device (a flat shard or one tensor).
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

struct AdamWStep {
    float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.f;
    long step = 1;           // t, from 1
    float grad_scale = 1.f;  // g enters as grad_scale * g (norm clipping's factor, folded in)
};

void adamw(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v, const AdamWStep& s);

}  // namespace meshlm::ops

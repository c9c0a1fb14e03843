// Inverted dropout over a device-tagged view (kernels.h's dropout), in place:
//   x[n, c] *= keep / (1 - rate), keep = (draw (row0 + n) * C + c of Philox(seed, stream) >= rate)
// The mask depends only on (seed, stream, global row, column), and is bitwise the same on every
// device; applying the op to the output gradient with the same arguments is its backward.
// x f32 [N, C]; rate in [0, 1) (0: a no-op); row0 >= 0, the global index of row 0.
#pragma once

#include <cstdint>

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

struct DropoutMask {
    float rate = 0.f;
    std::uint64_t seed = 0, stream = 0;
    std::int64_t row0 = 0;
};

void dropout(const Tensor& x, const DropoutMask& mask);

}  // namespace meshlm::ops

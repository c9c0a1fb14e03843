// A small tensor of optimizer state kept whole on every rank, named as checkpoints store it
// (Adafactor's factored statistics, optim/adafactor_plan.h). In core/ because both the optimizer
// and the checkpoint formats (io/) name them, and io/ never includes optim/.
#pragma once

#include <cstddef>
#include <string>

#include "meshlm/core/tensor.h"

namespace meshlm {

struct StateTensor {
    std::string name;  // as checkpoints store it
    Shape shape;
    std::size_t offset;  // in the optimizer's one statistics buffer
};

}  // namespace meshlm

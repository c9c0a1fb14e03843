// Training FLOPs per token, counted as 6 N_nonembedding + 6 V d + 12 L T d: forward + backward
// of every matmul weight (2 + 4 flops per weight per token), the tied head, and attention's
// QK^T and PV products at context T.
#pragma once

#include <cstddef>

#include "meshlm/core/param_layout.h"
#include "meshlm/model/model_config.h"

namespace meshlm {

std::size_t nonembedding_params(const ParamLayout& layout);
double train_flops_per_token(const ModelConfig& cfg, const ParamLayout& layout, int T);

}  // namespace meshlm

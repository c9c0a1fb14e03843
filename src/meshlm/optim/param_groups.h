// Optimizer groups from the parameter registry's facts: weight decay on matrices, everything or
// nothing (optim.decay_mask), and each tensor's learning-rate and eps multipliers
// (optim.mup_rule, mup_rule.h).
#pragma once

#include <cstddef>
#include <vector>

#include "meshlm/core/param_layout.h"
#include "meshlm/optim/optim_config.h"
#include "meshlm/optim/optimizer.h"

namespace meshlm {

// The groups of `layout`; d_model and d_base are the model's width and muP base width
// (model.d_model, model.mup_d_base). Throws InvalidInput naming optim.decay_mask's valid values.
std::vector<ParamGroup> param_groups(const ParamLayout& layout, const OptimConfig& optim,
                                     int d_model, int d_base);
// The groups restricted to [begin, end) of the flat buffer, offsets relative to begin: a shard
// boundary may cut a group, whose two parts keep its decay flag.
std::vector<ParamGroup> shard_groups(const std::vector<ParamGroup>& groups, std::size_t begin,
                                     std::size_t end);

}  // namespace meshlm

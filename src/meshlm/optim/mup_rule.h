// muP's per-tensor learning rates (optim.mup_rule, seed 002's optim_rule), from a tensor's muP
// role and fan-in (the parameter registry's facts):
//   sp       every tensor at lr
//   mup      hidden and readout matrices at lr * d_base / D (relative: "Tensor Programs V",
//            Appendix B.1); embeddings and vectors at lr
//   abs_mup  hidden and readout matrices at lr / fan_in; embeddings and vectors at lr
// With optim.mup_eps_scaling, Adam's eps scales by the same factor.
#pragma once

#include <cstdint>
#include <string>

#include "meshlm/optim/optim_config.h"

namespace meshlm {

struct LrScale {
    float lr = 1.f, eps = 1.f;
};

// role: embedding | hidden | readout | vector; fan_in: the whole tensor's input width.
LrScale mup_lr_scale(const OptimConfig& cfg, const std::string& role, std::int64_t fan_in,
                     int d_model, int d_base);

}  // namespace meshlm

#include "meshlm/optim/mup_rule.h"

#include "meshlm/core/error.h"

namespace meshlm {

LrScale mup_lr_scale(const OptimConfig& cfg, const std::string& role, std::int64_t fan_in,
                     int d_model, int d_base) {
    LrScale s;
    const bool matrix = role == "hidden" || role == "readout";
    if (cfg.mup_rule == "sp" || !matrix) return s;
    if (cfg.mup_rule == "mup")
        s.lr = static_cast<float>(static_cast<double>(d_base) / d_model);
    else if (cfg.mup_rule == "abs_mup")
        s.lr = static_cast<float>(1.0 / static_cast<double>(fan_in));
    else
        MESHLM_INVALID("optim.mup_rule must be sp, mup or abs_mup (got '", cfg.mup_rule, "')");
    if (cfg.mup_eps_scaling) s.eps = s.lr;
    return s;
}

}  // namespace meshlm

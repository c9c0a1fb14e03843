#include "meshlm/train/coord_probe.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "meshlm/optim/mup_rule.h"

namespace meshlm {

void CoordProbe::add_update_sums(const ParamLayout& layout, const OptimConfig& optim,
                                 const ModelConfig& model, const float* before, const float* after,
                                 std::size_t lo, std::size_t hi, float lr) {
    const auto& slices = layout.slices();
    for (std::size_t i = 0; i < slices.size(); ++i) {
        const ParamSlice& s = slices[i];
        const std::size_t a = std::max(s.offset, lo), b = std::min(s.offset + s.numel, hi);
        if (a >= b) continue;
        const std::int64_t fan_in = s.full_shape.ndim == 2 ? s.full_shape.dims[1] : 1;
        const double rate =
            static_cast<double>(lr) *
            mup_lr_scale(optim, s.mup_role, fan_in, model.d_model, model.mup_d_base).lr;
        double sum = 0;
        for (std::size_t k = a; k < b; ++k) sum += std::fabs(after[k - lo] - before[k - lo]);
        update_sums_[i] += rate > 0 ? sum / rate : 0.0;
        update_sums_[slices.size() + i] += static_cast<double>(b - a);
    }
}

}  // namespace meshlm

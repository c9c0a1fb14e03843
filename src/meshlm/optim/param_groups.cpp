#include "meshlm/optim/param_groups.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "meshlm/core/error.h"
#include "meshlm/optim/mup_rule.h"

namespace meshlm {

std::vector<ParamGroup> param_groups(const ParamLayout& layout, const OptimConfig& optim,
                                     int d_model, int d_base) {
    const std::string& mask = optim.decay_mask;
    if (mask != "matrices" && mask != "all" && mask != "none")
        MESHLM_INVALID("optim.decay_mask must be matrices, all or none (got '", mask, "')");
    std::vector<ParamGroup> groups;
    for (const ParamSlice& s : layout.slices()) {
        const bool decay = mask == "all" || (mask == "matrices" && s.decay);
        // Fan-in of the whole tensor (a tensor-parallel shard keeps its tensor's rule).
        const std::int64_t fan_in = s.full_shape.ndim == 2 ? s.full_shape.dims[1] : 1;
        const LrScale k = mup_lr_scale(optim, s.mup_role, fan_in, d_model, d_base);
        // Merge neighbours with the same facts within a block: fewer, longer optimizer sweeps
        // (elementwise, so how the buffer is cut changes no bit), each block's its own (a
        // trace shows the optimizer per block).
        if (!groups.empty()) {
            ParamGroup& b = groups.back();
            if (b.decay == decay && b.lr_scale == k.lr && b.eps_scale == k.eps &&
                b.layer == s.layer && b.offset + b.numel <= s.offset) {
                b.numel = s.offset + s.numel - b.offset;
                continue;
            }
        }
        groups.push_back({s.offset, s.numel, decay, k.lr, k.eps, s.layer});
    }
    return groups;
}

std::vector<ParamGroup> shard_groups(const std::vector<ParamGroup>& groups, std::size_t begin,
                                     std::size_t end) {
    std::vector<ParamGroup> out;
    for (const ParamGroup& g : groups) {
        const std::size_t lo = std::max(g.offset, begin), hi = std::min(g.offset + g.numel, end);
        if (lo < hi)
            out.push_back({lo - begin, hi - lo, g.decay, g.lr_scale, g.eps_scale, g.layer});
    }
    return out;
}

}  // namespace meshlm

#include "meshlm/model/key_bias.h"

#include <algorithm>
#include <cmath>

namespace meshlm {

float zero_key_bias_grads(const ParamLayout& layout, float* grads) {
    return zero_key_bias_grads(layout, grads, 0, layout.total());
}

float zero_key_bias_grads(const ParamLayout& layout, float* grads, std::size_t begin,
                          std::size_t end) {
    static const std::string kSuffix = "attn.c_attn.bias";
    float removed = 0;
    for (const ParamSlice& s : layout.slices()) {
        if (s.name.size() < kSuffix.size() ||
            s.name.compare(s.name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0)
            continue;
        const std::size_t third = s.numel / 3;
        const std::size_t lo = std::max(begin, s.offset + third),
                          hi = std::min(end, s.offset + 2 * third);
        for (std::size_t i = lo; i < hi; ++i) {
            removed = std::fmax(removed, std::fabs(grads[i - begin]));
            grads[i - begin] = 0.f;
        }
    }
    return removed;
}

}  // namespace meshlm

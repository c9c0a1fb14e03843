#include "meshlm/model/key_bias.h"

#include <cmath>

namespace meshlm {

float zero_key_bias_grads(const ParamLayout& layout, float* grads) {
    static const std::string kSuffix = "attn.c_attn.bias";
    float removed = 0;
    for (const ParamSlice& s : layout.slices()) {
        if (s.name.size() < kSuffix.size() ||
            s.name.compare(s.name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0)
            continue;
        const std::size_t third = s.numel / 3;
        for (float* g = grads + s.offset + third; g < grads + s.offset + 2 * third; ++g) {
            removed = std::fmax(removed, std::fabs(*g));
            *g = 0.f;
        }
    }
    return removed;
}

}  // namespace meshlm

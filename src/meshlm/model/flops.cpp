#include "meshlm/model/flops.h"

namespace meshlm {

std::size_t nonembedding_params(const ParamLayout& layout) {
    std::size_t n = 0;
    for (const auto& s : layout.slices())
        if (s.name != "wte.weight" && s.name != "wpe.weight") n += s.numel;
    return n;
}

double train_flops_per_token(const ModelConfig& cfg, const ParamLayout& layout, int T) {
    return 6.0 * nonembedding_params(layout) + 6.0 * cfg.vocab_size * cfg.d_model +
           12.0 * cfg.n_layer * T * cfg.d_model;
}

}  // namespace meshlm

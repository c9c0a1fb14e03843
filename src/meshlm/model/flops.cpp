#include "meshlm/model/flops.h"

namespace meshlm {

std::size_t nonembedding_params(const ParamLayout& layout) {
    std::size_t n = 0;
    for (const auto& s : layout.slices())
        // The embeddings (unit 0) are lookups; the head is counted by 6 V d.
        if (s.unit != 0 && s.name != "lm_head.weight") n += s.numel;
    return n;
}

double train_flops_per_token(const ModelConfig& cfg, const ParamLayout& layout, int T) {
    return 6.0 * nonembedding_params(layout) + 6.0 * cfg.vocab_size * cfg.d_model +
           12.0 * cfg.n_layer * T * cfg.d_model;
}

}  // namespace meshlm

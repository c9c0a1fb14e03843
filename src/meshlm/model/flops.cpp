#include "meshlm/model/flops.h"

namespace meshlm {

std::size_t nonembedding_params(const ParamLayout& layout) {
    std::size_t n = 0;
    for (const auto& s : layout.slices())
        // The embeddings (unit 0) are lookups; the head is counted by 6 V d.
        if (s.unit != 0 && s.name != "lm_head.weight") n += s.numel;
    return n;
}

std::size_t block_matmul_weights(const ParamLayout& layout) {
    std::size_t n = 0;
    for (const auto& s : layout.slices())
        if (s.layer >= 0 && s.full_shape.ndim == 2 && s.ema_decay == 0.f) n += s.numel;
    return n;
}

double train_flops_per_token(const ModelConfig& cfg, const ParamLayout& layout, int T) {
    // Attention's own multiply-adds per token, times 6 (forward 2, backward 4) as the weights':
    // full attention 2 T C (scores and values over the context); VQ attention over its window of
    // two blocks, the distances 0..L and the S codes, whatever T is.
    double attn = 2.0 * T * cfg.d_model, search = 0;
    if (cfg.vq()) {
        const double L = cfg.vq_block_len, S = cfg.vq_codes, dk = cfg.vq_d_k,
                     dv = cfg.vq_value_width();
        attn = (2 * L + S) * (dk + dv) + (L + 1) * dk;
        search = 2 * S * dk;
    }
    return 6.0 * static_cast<double>(block_matmul_weights(layout)) +
           6.0 * cfg.vocab_size * cfg.d_model + cfg.n_layer * (6.0 * attn + search);
}

double model_flops_utilization(double tokens_per_s, double flops_per_token, double peak_gflops,
                               int ranks) {
    return tokens_per_s * flops_per_token / (1e9 * peak_gflops * ranks);
}

}  // namespace meshlm

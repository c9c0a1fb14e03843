// Hyperparameters of a GPT-2-family model.
#pragma once

#include <cstdint>

namespace meshlm {

struct ModelConfig {
    int n_layer = 4;         // L
    int d_model = 128;       // C
    int n_head = 4;          // H; must divide d_model
    int vocab_size = 257;    // V: 256 bytes + end-of-document for the byte tokenizer
    int max_seq_len = 128;   // rows of the position embedding
    float ln_eps = 1e-5f;    // LayerNorm epsilon
    float init_std = 0.02f;  // std of the normal init; residual projections get / sqrt(2L)

    int head_dim() const { return d_model / n_head; }
    int mlp_width() const { return 4 * d_model; }
};

}  // namespace meshlm

// Hyperparameters of a GPT-2-family model.
#pragma once

#include <cstdint>
#include <string>

namespace meshlm {

struct ModelConfig {
    int n_layer = 4;         // L
    int d_model = 128;       // C
    int n_head = 4;          // H; must divide d_model
    int vocab_size = 257;    // V: 256 bytes + end-of-document for the byte tokenizer
    int max_seq_len = 128;   // rows of the position embedding
    float ln_eps = 1e-5f;    // LayerNorm epsilon
    float init_std = 0.02f;  // std of the normal init; residual projections get / sqrt(2L)
    // Warm start: weights from a meshlm run / checkpoint or an HF GPT-2 directory instead of
    // init_std (the optimizer and schedule start fresh). Empty = random init.
    std::string init_from;

    int head_dim() const { return d_model / n_head; }
    int mlp_width() const { return 4 * d_model; }
    // Same tensor shapes (init_from and checkpoints need this, not equal init settings).
    bool same_shapes(const ModelConfig& o) const {
        return n_layer == o.n_layer && d_model == o.d_model && n_head == o.n_head &&
               vocab_size == o.vocab_size && max_seq_len == o.max_seq_len;
    }
};

}  // namespace meshlm

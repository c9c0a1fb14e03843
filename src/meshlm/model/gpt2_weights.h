// Views of GPT-2's tensors inside flat buffers (parameters or gradients), and the registry.
#pragma once

#include <vector>

#include "meshlm/model/model_config.h"
#include "meshlm/model/param_layout.h"

namespace meshlm {

// Pointers to one block's tensors inside a flat buffer (parameters or gradients).
struct BlockWeights {
    float *ln1_w, *ln1_b;              // (C)
    float *qkv_w, *qkv_b;              // (3C, C), (3C)
    float *attn_proj_w, *attn_proj_b;  // (C, C), (C)
    float *ln2_w, *ln2_b;              // (C)
    float *fc_w, *fc_b;                // (4C, C), (4C)
    float *mlp_proj_w, *mlp_proj_b;    // (C, 4C), (C)
};

struct GPT2Weights {
    float* wte;  // (V, C)
    float* wpe;  // (P, C)
    std::vector<BlockWeights> blocks;
    float *lnf_w, *lnf_b;  // (C)
};

// The GPT-2 parameter registry for a config.
ParamLayout gpt2_layout(const ModelConfig& cfg);
// Points `w` (its blocks already sized to n_layer) at the tensors of a flat buffer laid out by
// gpt2_layout. Uses slice positions, not names, and allocates nothing: it runs every step.
void bind_weights(const ParamLayout& layout, float* base, GPT2Weights& w);

}  // namespace meshlm

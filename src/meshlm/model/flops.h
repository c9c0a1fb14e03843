// Training FLOPs per token and model FLOPs utilization. Every matmul costs 6 flops per weight
// per token (forward 2, backward 4): the blocks' weight matrices, the head (6 V d, tied or not)
// and attention's QK^T and PV products over the context (6 * 2 T d per layer; Transformer-VQ:
// its window of two blocks, its S codes and its L + 1 relative positions). Transformer-VQ's
// nearest-code search (k . c over the S codes) runs forward only: 2 S d_k per layer. Biases,
// norms, activations and softmax are not counted (PaLM's convention).
#pragma once

#include <cstddef>

#include "meshlm/core/param_layout.h"
#include "meshlm/model/model_config.h"

namespace meshlm {

// Parameters outside the embeddings and the output head (what `info` reports).
std::size_t nonembedding_params(const ParamLayout& layout);
// The blocks' matmul weights: their matrices, without the codebook statistics.
std::size_t block_matmul_weights(const ParamLayout& layout);
double train_flops_per_token(const ModelConfig& cfg, const ParamLayout& layout, int T);
// Model FLOPs utilization: tokens_per_s (all ranks together) * flops_per_token over the peak
// of `ranks` ranks of peak_gflops each.
double model_flops_utilization(double tokens_per_s, double flops_per_token, double peak_gflops,
                               int ranks);

}  // namespace meshlm

// model.init_from: where warm-start weights come from. Accepted: a .safetensors file in meshlm's
// names, a Hugging Face model directory (config.json; io/hf_model.h), a run directory (its final
// weights, else its latest checkpoint) or a checkpoint directory.
#pragma once

#include <string>
#include <vector>

#include "meshlm/core/param_layout.h"
#include "meshlm/model/model_config.h"

namespace meshlm {

// Loads weights into params (layout of transformer_layout); returns a description of the source for
// the log. Throws InvalidInput naming the path and what is wrong (missing, other shapes). With
// model.init_from_layers, the source has its own depth and block l comes from its block map[l].
std::string load_init_weights(const std::string& path, const ModelConfig& model,
                              const ParamLayout& layout, float* params);

// model.init_from_layers parsed and checked: n_layer source block indices in [0, source_layers).
std::vector<int> parse_layer_map(const std::string& text, int n_layer, int source_layers);
// The number of blocks of the weights model.init_from names (any accepted kind of source).
int init_source_layers(const std::string& path);

}  // namespace meshlm

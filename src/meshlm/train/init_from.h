// model.init_from: where warm-start weights come from. Accepted: a .safetensors file in meshlm's
// names, a Hugging Face model directory (config.json; io/hf_model.h), a run directory (its final
// weights, else its latest checkpoint) or a checkpoint directory.
#pragma once

#include <string>

#include "meshlm/core/param_layout.h"
#include "meshlm/model/model_config.h"

namespace meshlm {

// Loads weights into params (layout of transformer_layout); returns a description of the source for
// the log. Throws InvalidInput naming the path and what is wrong (missing, other shapes).
std::string load_init_weights(const std::string& path, const ModelConfig& model,
                              const ParamLayout& layout, float* params);

}  // namespace meshlm

// model.init_from: where warm-start weights come from. Accepted, in this order of detection:
// a checkpoint directory (trainer.json), a run directory (its final model.safetensors, else its
// latest checkpoint), or a single .safetensors file in meshlm's names.
#pragma once

#include <string>

#include "meshlm/model/param_layout.h"

namespace meshlm {

// Loads weights into params (layout of gpt2_layout); returns a description of the source for
// the log. Throws InvalidInput naming the path and what is wrong (missing, other shapes).
std::string load_init_weights(const std::string& path, const ParamLayout& layout, float* params);

}  // namespace meshlm

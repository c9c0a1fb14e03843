// Model weights as safetensors, one tensor per registry slice, named as in the registry.
#pragma once

#include <map>
#include <string>

#include "meshlm/core/param_layout.h"

namespace meshlm {

void save_weights(const std::string& path, const ParamLayout& layout, const float* params,
                  const std::map<std::string, std::string>& metadata = {});
// `path` is a .safetensors file or a directory holding model.safetensors or its sharded index.
// Checks that every slice is present with its shape and dtype (f32; in a directory also bf16,
// widened) before writing anything into params.
void load_weights(const std::string& path, const ParamLayout& layout, float* params);

}  // namespace meshlm

// Model weights as safetensors, one tensor per registry slice, named as in the registry.
#pragma once

#include <map>
#include <string>

#include "meshlm/model/param_layout.h"

namespace meshlm {

void save_weights(const std::string& path, const ParamLayout& layout, const float* params,
                  const std::map<std::string, std::string>& metadata = {});
// Checks that every slice is present with its shape and dtype before writing anything.
void load_weights(const std::string& path, const ParamLayout& layout, float* params);

}  // namespace meshlm

#include "meshlm/io/weights.h"

#include <algorithm>

#include "meshlm/core/error.h"
#include "meshlm/io/safetensors.h"

namespace meshlm {

void save_weights(const std::string& path, const ParamLayout& layout, const float* params,
                  const std::map<std::string, std::string>& metadata) {
    std::vector<SafetensorsTensor> tensors;
    for (const auto& s : layout.slices())
        tensors.push_back({s.name, DType::f32, s.shape, params + s.offset});
    write_safetensors(path, tensors, metadata);
}

void load_weights(const std::string& path, const ParamLayout& layout, float* params) {
    SafetensorsFile f(path);
    for (const auto& s : layout.slices()) {
        if (!f.has(s.name))
            MESHLM_INVALID(path, ": missing tensor '", s.name,
                           "' (was it written for another "
                           "model config?)");
        const auto& e = f.entry(s.name);
        if (!(e.shape == s.shape))
            MESHLM_INVALID(path, ": tensor '", s.name, "' has shape ", e.shape.str(),
                           " but the config needs ", s.shape.str());
        if (e.dtype != DType::f32)
            MESHLM_INVALID(path, ": tensor '", s.name, "' is ", dtype_name(e.dtype), ", need f32");
    }
    for (const auto& s : layout.slices()) {
        auto v = f.f32(s.name);
        std::copy(v.begin(), v.end(), params + s.offset);
    }
}

}  // namespace meshlm

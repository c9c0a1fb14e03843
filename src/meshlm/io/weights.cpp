#include "meshlm/io/weights.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/io/safetensors.h"
#include "meshlm/io/safetensors_set.h"

namespace meshlm {
namespace {

// Checks every slice (presence, shape, dtype) before copying any, so a mismatch leaves params
// untouched. Works on one file or a sharded set.
template <typename Source>
void copy_slices(const Source& src, const std::string& where, const ParamLayout& layout,
                 float* params, bool allow_bf16) {
    for (const auto& s : layout.slices()) {
        if (!src.has(s.name))
            MESHLM_INVALID(where, ": missing tensor '", s.name,
                           "' (was it written for another model config?)");
        const auto& e = src.entry(s.name);
        if (!(e.shape == s.shape))
            MESHLM_INVALID(where, ": tensor '", s.name, "' has shape ", e.shape.str(),
                           " but the config needs ", s.shape.str());
        if (e.dtype != DType::f32 && !(allow_bf16 && e.dtype == DType::bf16))
            MESHLM_INVALID(where, ": tensor '", s.name, "' is ", dtype_name(e.dtype), ", need f32",
                           allow_bf16 ? " or bf16" : "");
    }
    // Every stored tensor must be consumed: one the model has no slot for means the file was
    // written for another model (more layers, say), which same-named slices would hide.
    std::set<std::string> wanted;
    for (const auto& s : layout.slices()) wanted.insert(s.name);
    std::vector<std::string> extra;
    for (const auto& name : src.names())
        if (!wanted.count(name)) extra.push_back(name);
    if (!extra.empty())
        MESHLM_INVALID(where, ": holds ", extra.size(),
                       " tensor(s) this model config has no use for ", "(first '", extra.front(),
                       "'); it was written for another model config");
    for (const auto& s : layout.slices()) {
        auto v = src.f32(s.name);
        std::copy(v.begin(), v.end(), params + s.offset);
    }
}

}  // namespace

void save_weights(const std::string& path, const ParamLayout& layout, const float* params,
                  const std::map<std::string, std::string>& metadata) {
    std::vector<SafetensorsTensor> tensors;
    for (const auto& s : layout.slices())
        tensors.push_back({s.name, DType::f32, s.shape, params + s.offset});
    write_safetensors(path, tensors, metadata);
}

void load_weights(const std::string& path, const ParamLayout& layout, float* params) {
    if (std::filesystem::is_directory(path)) {
        if (!SafetensorsSet::present(path))
            MESHLM_INVALID(path,
                           " holds neither model.safetensors nor model.safetensors.index.json");
        copy_slices(SafetensorsSet(path), path, layout, params, true);
    } else {
        copy_slices(SafetensorsFile(path), path, layout, params, false);
    }
}

}  // namespace meshlm

#include "meshlm/model/param_layout.h"

#include "meshlm/core/error.h"

namespace meshlm {

const ParamSlice& ParamLayout::add(const std::string& name, Shape shape, int layer) {
    MESHLM_CHECK(!find(name), "duplicate parameter ", name);
    std::size_t n = static_cast<std::size_t>(shape.numel());
    slices_.push_back({name, shape, total_, n, layer});
    total_ += (n + 15) / 16 * 16;
    return slices_.back();
}

const ParamSlice* ParamLayout::find(const std::string& name) const {
    for (const auto& s : slices_)
        if (s.name == name) return &s;
    return nullptr;
}

const ParamSlice& ParamLayout::at(const std::string& name) const {
    const ParamSlice* s = find(name);
    MESHLM_CHECK(s, "no parameter named ", name);
    return *s;
}

std::size_t ParamLayout::count() const {
    std::size_t n = 0;
    for (const auto& s : slices_) n += s.numel;
    return n;
}

}  // namespace meshlm

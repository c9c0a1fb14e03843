#include "meshlm/core/param_layout.h"

#include <algorithm>
#include <cmath>

#include "meshlm/core/error.h"

namespace meshlm {

const ParamSlice& ParamLayout::add(ParamSlice s) {
    MESHLM_CHECK(!find(s.name), "duplicate parameter ", s.name);
    const int last = units_.empty() ? -1 : static_cast<int>(units_.size()) - 1;
    MESHLM_CHECK(s.unit == last || s.unit == last + 1, "parameter ", s.name, " of unit ", s.unit,
                 " after unit ", last, ": units are appended in order");
    if (s.unit == last + 1) units_.push_back({slices_.size(), slices_.size()});
    ++units_.back().second;
    s.offset = total_;
    s.numel = static_cast<std::size_t>(s.shape.numel());
    if (s.full_shape.ndim == 0) s.full_shape = s.shape;
    if (s.index == 0) s.index = static_cast<int>(slices_.size());
    total_ += (s.numel + 15) / 16 * 16;
    slices_.push_back(std::move(s));
    return slices_.back();
}

const ParamSlice& ParamLayout::add(const std::string& name, Shape shape, int layer) {
    ParamSlice s;
    s.name = name;
    s.shape = shape;
    s.layer = layer;
    // Blocks are units 1 + layer; what precedes them is unit 0, what follows them the last.
    const int last = static_cast<int>(units_.size()) - 1;
    if (slices_.empty())
        s.unit = layer + 1;
    else if (layer >= 0)
        s.unit = std::max(layer + 1, last);
    else
        s.unit = slices_.back().layer >= 0 ? last + 1 : last;
    s.decay = shape.ndim == 2;
    return add(std::move(s));
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

std::pair<std::size_t, std::size_t> ParamLayout::unit_slices(int unit) const {
    MESHLM_CHECK(unit >= 0 && unit < unit_count(), "unit ", unit, " of ", unit_count());
    return units_[unit];
}

std::pair<std::size_t, std::size_t> ParamLayout::unit_range(int unit) const {
    const auto [first, last] = unit_slices(unit);
    return {slices_[first].offset, slices_[last - 1].offset + slices_[last - 1].numel};
}

Shape tp_local_shape(const ParamSlice& s, int M) {
    Shape local = s.full_shape;
    if (s.split == TpSplit::rows) {
        std::int64_t rows = 0;
        if (s.sections.empty())
            rows = tp_block_rows(local.dims[0], M);
        else
            for (std::int64_t sec : s.sections) rows += tp_block_rows(sec, M);
        local.dims[0] = rows;
    } else if (s.split == TpSplit::columns) {
        MESHLM_CHECK(local.dims[1] % M == 0, s.name, ": ", local.dims[1], " columns over ", M,
                     " model ranks");
        local.dims[1] /= M;
    }
    return local;
}

}  // namespace meshlm

namespace meshlm {

float zero_null_grads(const ParamLayout& layout, float* grads, std::size_t begin, std::size_t end) {
    float removed = 0;
    for (const ParamSlice& s : layout.slices()) {
        if (s.null_grad_end <= s.null_grad_begin) continue;
        const std::size_t lo = std::max(begin, s.offset + s.null_grad_begin),
                          hi = std::min(end, s.offset + s.null_grad_end);
        for (std::size_t i = lo; i < hi; ++i) {
            removed = std::fmax(removed, std::fabs(grads[i - begin]));
            grads[i - begin] = 0.f;
        }
    }
    return removed;
}

void ema_update(const ParamLayout& layout, float* params, float* grads, std::size_t begin,
                std::size_t end) {
    for (const ParamSlice& s : layout.slices()) {
        if (s.ema_decay <= 0.f) continue;
        const std::size_t lo = std::max(begin, s.offset), hi = std::min(end, s.offset + s.numel);
        const float keep = s.ema_decay, add = 1.f - s.ema_decay;
        for (std::size_t i = lo; i < hi; ++i) {
            params[i - begin] = keep * params[i - begin] + add * grads[i - begin];
            grads[i - begin] = 0.f;
        }
    }
}

}  // namespace meshlm

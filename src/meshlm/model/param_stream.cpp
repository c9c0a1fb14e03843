#include "meshlm/model/param_stream.h"

#include "meshlm/core/error.h"

namespace meshlm {
namespace {

// Slice indices [first, last) of a unit; the order is fixed by gpt2_layout: wte, wpe, 12 per
// block, ln_f weight and bias.
std::pair<std::size_t, std::size_t> unit_slices(std::size_t slices, int unit) {
    const std::size_t L = (slices - 4) / 12, u = static_cast<std::size_t>(unit);
    MESHLM_CHECK(slices == 4 + 12 * L && unit >= 0 && u <= L + 1, "unit ", unit,
                 " of a layout with ", slices, " slices");
    if (u == 0) return {0, 2};
    if (u == L + 1) return {2 + 12 * L, 4 + 12 * L};
    return {2 + 12 * (u - 1), 14 + 12 * (u - 1)};
}

}  // namespace

int gpt2_unit_count(const ParamLayout& layout) {
    const std::size_t slices = layout.slices().size(), L = (slices - 4) / 12;
    MESHLM_CHECK(slices == 4 + 12 * L, "a GPT-2 layout has 4 + 12 L slices, not ", slices);
    return static_cast<int>(L) + 2;
}

std::pair<std::size_t, std::size_t> gpt2_unit_range(const ParamLayout& layout, int unit) {
    const auto& s = layout.slices();
    const auto [first, last] = unit_slices(s.size(), unit);
    return {s[first].offset, s[last - 1].offset + s[last - 1].numel};
}

void bind_unit(const ParamLayout& layout, int unit, float* base, GPT2Weights& w) {
    const auto& s = layout.slices();
    const auto [first, last] = unit_slices(s.size(), unit);
    const std::size_t begin = s[first].offset;
    auto at = [&](std::size_t i) { return base + (s[i].offset - begin); };
    const std::size_t L = w.blocks.size();
    if (unit == 0) {
        w.wte = at(0);
        w.wpe = at(1);
    } else if (static_cast<std::size_t>(unit) == L + 1) {
        w.lnf_w = at(first);
        w.lnf_b = at(first + 1);
    } else {
        const std::size_t i = first;
        w.blocks[unit - 1] = {at(i),     at(i + 1), at(i + 2), at(i + 3), at(i + 4),  at(i + 5),
                              at(i + 6), at(i + 7), at(i + 8), at(i + 9), at(i + 10), at(i + 11)};
    }
}

WeightViews::WeightViews(const ParamLayout& layout, int n_layer)
    : layout_(layout), n_layer_(n_layer) {
    w.blocks.resize(n_layer);
    g.blocks.resize(n_layer);
}

void WeightViews::begin(const float* params, float* grads, ParamStream::Pass pass) {
    if (!stream_) {
        bind_weights(layout_, const_cast<float*>(params), w);
        if (grads) bind_weights(layout_, grads, g);
        return;
    }
    for (int u : {0, n_layer_ + 1}) {
        bind_unit(layout_, u, const_cast<float*>(stream_->acquire(u, pass)), w);
        if (pass == ParamStream::Pass::backward) bind_unit(layout_, u, stream_->grads(u), g);
    }
}

void WeightViews::begin_block(int layer, ParamStream::Pass pass) {
    if (!stream_) return;
    bind_unit(layout_, layer + 1, const_cast<float*>(stream_->acquire(layer + 1, pass)), w);
    if (pass == ParamStream::Pass::backward)
        bind_unit(layout_, layer + 1, stream_->grads(layer + 1), g);
}

void WeightViews::end_block(int layer, ParamStream::Pass pass) {
    if (!stream_) return;
    stream_->release(layer + 1);
    if (pass == ParamStream::Pass::backward) stream_->grads_done(layer + 1);
}

void WeightViews::head_done() {
    if (stream_) stream_->grads_done(n_layer_ + 1);
}

void WeightViews::embeddings_done() {
    if (stream_) stream_->grads_done(0);
}

}  // namespace meshlm

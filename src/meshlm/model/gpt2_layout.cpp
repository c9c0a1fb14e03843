// GPT-2 parameter registry, views into flat buffers, and initialization.
#include <algorithm>
#include <cmath>

#include "meshlm/core/error.h"
#include "meshlm/core/rng.h"
#include "meshlm/model/gpt2.h"

namespace meshlm {

ParamLayout gpt2_layout(const ModelConfig& cfg) {
    const std::int64_t C = cfg.d_model, F = cfg.mlp_width();
    ParamLayout p;
    p.add("wte.weight", {cfg.vocab_size, C}, -1);
    p.add("wpe.weight", {cfg.max_seq_len, C}, -1);
    for (int l = 0; l < cfg.n_layer; ++l) {
        const std::string h = "h." + std::to_string(l) + ".";
        p.add(h + "ln_1.weight", {C}, l);
        p.add(h + "ln_1.bias", {C}, l);
        p.add(h + "attn.c_attn.weight", {3 * C, C}, l);
        p.add(h + "attn.c_attn.bias", {3 * C}, l);
        p.add(h + "attn.c_proj.weight", {C, C}, l);
        p.add(h + "attn.c_proj.bias", {C}, l);
        p.add(h + "ln_2.weight", {C}, l);
        p.add(h + "ln_2.bias", {C}, l);
        p.add(h + "mlp.c_fc.weight", {F, C}, l);
        p.add(h + "mlp.c_fc.bias", {F}, l);
        p.add(h + "mlp.c_proj.weight", {C, F}, l);
        p.add(h + "mlp.c_proj.bias", {C}, l);
    }
    p.add("ln_f.weight", {C}, -1);
    p.add("ln_f.bias", {C}, -1);
    return p;
}

void bind_weights(const ParamLayout& layout, float* base, GPT2Weights& w) {
    // Slice order is fixed by gpt2_layout: wte, wpe, 12 per block, ln_f weight and bias.
    const auto& s = layout.slices();
    const std::size_t L = w.blocks.size();
    MESHLM_CHECK(s.size() == 4 + 12 * L, "layout has ", s.size(), " slices, expected ", 4 + 12 * L);
    auto at = [&](std::size_t i) { return base + s[i].offset; };
    w.wte = at(0);
    w.wpe = at(1);
    for (std::size_t l = 0; l < L; ++l) {
        const std::size_t i = 2 + 12 * l;
        w.blocks[l] = {at(i),     at(i + 1), at(i + 2), at(i + 3), at(i + 4),  at(i + 5),
                       at(i + 6), at(i + 7), at(i + 8), at(i + 9), at(i + 10), at(i + 11)};
    }
    w.lnf_w = at(2 + 12 * L);
    w.lnf_b = at(3 + 12 * L);
}

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

void gpt2_init(const ModelConfig& cfg, const ParamLayout& layout, float* params,
               std::uint64_t seed) {
    gpt2_init_range(cfg, layout, params, seed, 0, layout.total());
}

void gpt2_init_range(const ModelConfig& cfg, const ParamLayout& layout, float* params,
                     std::uint64_t seed, std::size_t begin, std::size_t end) {
    const float residual_std = cfg.init_std / std::sqrt(2.f * cfg.n_layer);
    const auto& slices = layout.slices();
    for (std::size_t i = 0; i < slices.size(); ++i) {
        const ParamSlice& s = slices[i];
        const std::size_t lo = std::max(begin, s.offset), hi = std::min(end, s.offset + s.numel);
        if (lo >= hi) continue;
        float* p = params + (lo - begin);  // the slice's element lo - s.offset
        if (s.is_matrix()) {
            // One RNG stream per parameter: init does not depend on layout order, threads or
            // sharding. Element j is the stream's draw j (one Philox block per normal), so a
            // range starts drawing at its first element.
            Philox rng(seed, 0x1000 + i);
            rng.set_counter(lo - s.offset);
            const float std = ends_with(s.name, "c_proj.weight") ? residual_std : cfg.init_std;
            for (std::size_t k = 0; k < hi - lo; ++k) p[k] = std * rng.normal();
        } else {
            const float v = ends_with(s.name, "ln_1.weight") || ends_with(s.name, "ln_2.weight") ||
                                    s.name == "ln_f.weight"
                                ? 1.f
                                : 0.f;
            for (std::size_t k = 0; k < hi - lo; ++k) p[k] = v;
        }
    }
}

}  // namespace meshlm

#include <iterator>
#include <utility>

#include "meshlm/core/error.h"
#include "meshlm/model/tensors.h"

namespace meshlm {
namespace {

// Outside the blocks: what each slice fills. Block tensors go through kBlock's members.
enum Field { wte, wpe, pe_scale, t5_bias, lnf_w, lnf_b, head_w, head_b, block_field };

using BlockMember = float* BlockTensors::*;
const std::pair<const char*, BlockMember> kBlock[] = {{"ln_1.weight", &BlockTensors::ln1_w},
                                                      {"ln_1.bias", &BlockTensors::ln1_b},
                                                      {"attn.c_attn.weight", &BlockTensors::qkv_w},
                                                      {"attn.c_attn.bias", &BlockTensors::qkv_b},
                                                      {"attn.c_proj.weight", &BlockTensors::proj_w},
                                                      {"attn.c_proj.bias", &BlockTensors::proj_b},
                                                      {"ln_2.weight", &BlockTensors::ln2_w},
                                                      {"ln_2.bias", &BlockTensors::ln2_b},
                                                      {"mlp.c_fc.weight", &BlockTensors::fc_w},
                                                      {"mlp.c_fc.bias", &BlockTensors::fc_b},
                                                      {"mlp.c_proj.weight", &BlockTensors::out_w},
                                                      {"mlp.c_proj.bias", &BlockTensors::out_b},
                                                      {"vq.qk.weight", &BlockTensors::vq_qk_w},
                                                      {"vq.vg.weight", &BlockTensors::vq_vg_w},
                                                      {"vq.out.weight", &BlockTensors::proj_w},
                                                      {"vq.r.weight", &BlockTensors::vq_r_w},
                                                      {"vq.u", &BlockTensors::vq_u},
                                                      {"vq.v", &BlockTensors::vq_v},
                                                      {"vq.c_sum", &BlockTensors::c_sum},
                                                      {"vq.c_count", &BlockTensors::c_count}};

bool ends_with(const std::string& s, const char* suffix) {
    const std::string x(suffix);
    return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

// Field of a slice; for block_field, index into kBlock.
std::pair<Field, int> field_of(const std::string& n) {
    if (n == "wte.weight") return {wte, 0};
    if (n == "wpe.weight") return {wpe, 0};
    if (n == "wpe.scale") return {pe_scale, 0};
    if (n == "t5.rel_bias") return {t5_bias, 0};
    if (n == "ln_f.weight") return {lnf_w, 0};
    if (n == "ln_f.bias") return {lnf_b, 0};
    if (n == "lm_head.weight") return {head_w, 0};
    if (n == "lm_head.bias") return {head_b, 0};
    for (std::size_t i = 0; i < std::size(kBlock); ++i)
        if (ends_with(n, kBlock[i].first)) return {block_field, static_cast<int>(i)};
    MESHLM_CHECK(false, "not a transformer parameter: ", n);
    return {wte, 0};  // unreachable
}

}  // namespace

TensorBinder::TensorBinder(const ParamLayout& layout) : layout_(layout), tied_(true) {
    for (const ParamSlice& s : layout.slices()) {
        const auto [f, i] = field_of(s.name);
        field_.push_back(f == block_field ? block_field + i : f);
        if (f == head_w) tied_ = false;
    }
}

void TensorBinder::bind_unit(int unit, float* base, ModelTensors& t) const {
    const auto& s = layout_.slices();
    const auto [first, last] = layout_.unit_slices(unit);
    const std::size_t begin = s[first].offset;
    for (std::size_t i = first; i < last; ++i) {
        float* p = base + (s[i].offset - begin);
        if (field_[i] >= block_field) {
            t.blocks[s[i].layer].*(kBlock[field_[i] - block_field].second) = p;
            continue;
        }
        switch (static_cast<Field>(field_[i])) {
            case wte:
                t.wte = p;
                if (tied_) t.head_w = p;
                break;
            case wpe:
                t.wpe = p;
                break;
            case pe_scale:
                t.pe_scale = p;
                break;
            case t5_bias:
                t.t5_bias = p;
                break;
            case lnf_w:
                t.lnf_w = p;
                break;
            case lnf_b:
                t.lnf_b = p;
                break;
            case head_w:
                t.head_w = p;
                break;
            case head_b:
                t.head_b = p;
                break;
            case block_field:
                break;
        }
    }
}

void TensorBinder::bind_all(float* base, ModelTensors& t) const {
    for (int u = 0; u < layout_.unit_count(); ++u)
        bind_unit(u, base + layout_.unit_range(u).first, t);
}

WeightViews::WeightViews(const ParamLayout& layout, int n_layer)
    : binder_(layout), n_layer_(n_layer) {
    w.blocks.resize(n_layer);
    g.blocks.resize(n_layer);
}

void WeightViews::begin(const float* params, float* grads, ParamStream::Pass pass) {
    if (!stream_) {
        binder_.bind_all(const_cast<float*>(params), w);
        if (grads) binder_.bind_all(grads, g);
        return;
    }
    for (int u : {0, n_layer_ + 1}) {
        binder_.bind_unit(u, const_cast<float*>(stream_->acquire(u, pass)), w);
        if (pass == ParamStream::Pass::backward) binder_.bind_unit(u, stream_->grads(u), g);
    }
}

void WeightViews::begin_block(int layer, ParamStream::Pass pass) {
    if (!stream_) return;
    binder_.bind_unit(layer + 1, const_cast<float*>(stream_->acquire(layer + 1, pass)), w);
    if (pass == ParamStream::Pass::backward)
        binder_.bind_unit(layer + 1, stream_->grads(layer + 1), g);
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

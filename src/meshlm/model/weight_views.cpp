#include "meshlm/core/error.h"
#include "meshlm/model/tensors.h"

namespace meshlm {
namespace {

enum Field {
    wte,
    wpe,
    ln1_w,
    ln1_b,
    qkv_w,
    qkv_b,
    proj_w,
    proj_b,
    ln2_w,
    ln2_b,
    fc_w,
    fc_b,
    out_w,
    out_b,
    lnf_w,
    lnf_b,
    head_w,
    head_b
};

bool ends_with(const std::string& s, const char* suffix) {
    const std::string x(suffix);
    return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

Field field_of(const std::string& n) {
    static const std::pair<const char*, Field> kBlock[] = {
        {"ln_1.weight", ln1_w},      {"ln_1.bias", ln1_b},           {"attn.c_attn.weight", qkv_w},
        {"attn.c_attn.bias", qkv_b}, {"attn.c_proj.weight", proj_w}, {"attn.c_proj.bias", proj_b},
        {"ln_2.weight", ln2_w},      {"ln_2.bias", ln2_b},           {"mlp.c_fc.weight", fc_w},
        {"mlp.c_fc.bias", fc_b},     {"mlp.c_proj.weight", out_w},   {"mlp.c_proj.bias", out_b}};
    if (n == "wte.weight") return wte;
    if (n == "wpe.weight") return wpe;
    if (n == "ln_f.weight") return lnf_w;
    if (n == "ln_f.bias") return lnf_b;
    if (n == "lm_head.weight") return head_w;
    if (n == "lm_head.bias") return head_b;
    for (const auto& [suffix, f] : kBlock)
        if (ends_with(n, suffix)) return f;
    MESHLM_CHECK(false, "not a transformer parameter: ", n);
    return wte;  // unreachable
}

}  // namespace

TensorBinder::TensorBinder(const ParamLayout& layout) : layout_(layout), tied_(true) {
    for (const ParamSlice& s : layout.slices()) {
        field_.push_back(field_of(s.name));
        if (field_.back() == head_w) tied_ = false;
    }
}

void TensorBinder::bind_unit(int unit, float* base, ModelTensors& t) const {
    const auto& s = layout_.slices();
    const auto [first, last] = layout_.unit_slices(unit);
    const std::size_t begin = s[first].offset;
    for (std::size_t i = first; i < last; ++i) {
        float* p = base + (s[i].offset - begin);
        BlockTensors* b = s[i].layer >= 0 ? &t.blocks[s[i].layer] : nullptr;
        switch (static_cast<Field>(field_[i])) {
            case wte:
                t.wte = p;
                if (tied_) t.head_w = p;
                break;
            case wpe:
                t.wpe = p;
                break;
            case ln1_w:
                b->ln1_w = p;
                break;
            case ln1_b:
                b->ln1_b = p;
                break;
            case qkv_w:
                b->qkv_w = p;
                break;
            case qkv_b:
                b->qkv_b = p;
                break;
            case proj_w:
                b->proj_w = p;
                break;
            case proj_b:
                b->proj_b = p;
                break;
            case ln2_w:
                b->ln2_w = p;
                break;
            case ln2_b:
                b->ln2_b = p;
                break;
            case fc_w:
                b->fc_w = p;
                break;
            case fc_b:
                b->fc_b = p;
                break;
            case out_w:
                b->out_w = p;
                break;
            case out_b:
                b->out_b = p;
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

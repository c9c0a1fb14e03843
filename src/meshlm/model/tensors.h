// Pointers to the transformer's tensors inside a flat buffer (parameters or gradients) -- whole,
// a tensor-parallel shard, or one unit at a time from a ParamStream. Absent tensors (a bias the
// config leaves out, wpe without learned positions, pe_scale without scaled sinusoids, the head
// when tied) are null.
#pragma once

#include <vector>

#include "meshlm/core/param_layout.h"
#include "meshlm/core/param_stream.h"

namespace meshlm {

struct BlockTensors {
    float *ln1_w = nullptr, *ln1_b = nullptr;
    float *qkv_w = nullptr, *qkv_b = nullptr;    // ((Hl + 2Kl) D, C)
    float *proj_w = nullptr, *proj_b = nullptr;  // (C, Hl D)
    float *ln2_w = nullptr, *ln2_b = nullptr;    // sequential blocks
    float *fc_w = nullptr, *fc_b = nullptr;      // (Fl or 2 Fl, C)
    float *out_w = nullptr, *out_b = nullptr;    // (C, Fl)
    // Transformer-VQ attention (model.attention: vq; its output projection is proj_w).
    float *vq_qk_w = nullptr, *vq_vg_w = nullptr;  // (2 dk, C) q | k; (2 dv, C) v | gate
    float* vq_r_w = nullptr;                       // (dk, C) relative-position projection
    float *vq_u = nullptr, *vq_v = nullptr;        // (dk) content and position biases
    float *c_sum = nullptr, *c_count = nullptr;    // (S, dk), (S): the codebook's statistics
};

struct ModelTensors {
    float *wte = nullptr, *wpe = nullptr;
    float* pe_scale = nullptr;  // (1) the sinusoids' scale (model.position scaled_sin)
    float* t5_bias = nullptr;   // (Hl, buckets) T5's relative bias table (model.position t5_bias)
    std::vector<BlockTensors> blocks;
    float *lnf_w = nullptr, *lnf_b = nullptr;
    float *head_w = nullptr, *head_b = nullptr;  // head_w: lm_head, or wte when tied
};

// Binds a layout's tensors to ModelTensors, unit by unit. Which field a slice fills is read
// once from the layout (transformer_layout's names) and kept as an index table, so binding a
// unit -- every block of every step -- is a few pointer additions.
class TensorBinder {
  public:
    explicit TensorBinder(const ParamLayout& layout);
    // Points unit `unit`'s tensors at `base`, the address of the unit's first element.
    void bind_unit(int unit, float* base, ModelTensors& t) const;
    // Every unit, from the start of a flat buffer.
    void bind_all(float* base, ModelTensors& t) const;

  private:
    const ParamLayout& layout_;
    std::vector<int> field_;  // per slice: which tensor (Field in tensors.cpp)
    bool tied_;
};

// The parameter and gradient views of one model call, from flat buffers or from a stream. The
// model calls begin() at the start of forward / backward and around each block begin_block() /
// end_block(); backward also head_done() once the last unit's gradients are complete and
// embeddings_done() at its end. Without a stream all of these only bind once.
class WeightViews {
  public:
    WeightViews(const ParamLayout& layout, int n_layer);

    void set_stream(ParamStream* stream) { stream_ = stream; }
    ParamStream* stream() const { return stream_; }

    // grads == nullptr in forward. With a stream, params and grads are ignored.
    void begin(const float* params, float* grads, ParamStream::Pass pass);
    void begin_block(int layer, ParamStream::Pass pass);
    void end_block(int layer, ParamStream::Pass pass);
    void head_done();
    void embeddings_done();

    ModelTensors w, g;  // parameters, gradients (backward)

  private:
    TensorBinder binder_;
    int n_layer_;
    ParamStream* stream_ = nullptr;
};

}  // namespace meshlm

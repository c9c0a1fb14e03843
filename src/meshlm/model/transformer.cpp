// Transformer forward and hand-written backward around the blocks: the embedding, the loop over
// the blocks (block.h, run with this file's BlockRun pass: causal full attention or
// Transformer-VQ's, reductions over the model ranks, dropout, the coordinate check), the head
// and the loss. reduce() sums over the model ranks (Megatron's g; its backward f is the reduce
// of dln).
// Head: logits = head(norm_f(x_L)); the loss gradient overwrites the logits in place, then
// dlnf = reduce(dlogits W), dres = norm_f^T(dlnf), and the embedding backward scatters dres into
// wte and wpe (a tied head adds both uses into wte).
#include "meshlm/model/transformer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "meshlm/core/error.h"
#include "meshlm/core/trace.h"
#include "meshlm/kernels/device.h"
#include "meshlm/kernels/device_buffer.h"
#include "meshlm/kernels/ops/bf16.h"
#include "meshlm/kernels/ops/clip.h"
#include "meshlm/kernels/ops/dropout.h"
#include "meshlm/kernels/ops/elementwise.h"
#include "meshlm/kernels/ops/linear.h"
#include "meshlm/kernels/ops/residual.h"
#include "meshlm/kernels/ops/stats.h"
#include "meshlm/model/linear.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm {
namespace k = kernels;

namespace {

// The Philox stream of one dropout site of one step: masks never repeat across steps, layers
// or sites, and depend on nothing else.
std::uint64_t dropout_stream(std::int64_t step, int layer, int site) {
    return ((static_cast<std::uint64_t>(step) * 4096 + static_cast<std::uint64_t>(layer + 1)) * 8) +
           static_cast<std::uint64_t>(site);
}

// bf16 precision: v's n floats rounded to bf16 into `at`, which v then points to; at advances.
void round_vector(float*& v, float*& at, int n, Device d) {
    if (!v) return;
    ops::round_bf16(view(at, {n}, d), view(v, {n}, d));
    v = at;
    at += n;
}

}  // namespace

// The Transformer's block pass: causal full attention over the rows (or Transformer-VQ's,
// continuing the carried states), branches reduced over the model ranks and dropped out when
// `train`, the coordinate check's records when `recording`. `rerun`: the backward's pass, whose
// recomputation restarts Transformer-VQ's core from copies of the states the forward began at.
class Transformer::BlockRun final : public BlockPass {
  public:
    BlockRun(Transformer& t, bool train, bool recording, bool rerun)
        : t_(t), train_(train), recording_(recording), rerun_(rerun) {}

    void attend(int l, float* y, float* lse, const float* qkv, int B, int T) override {
        t_.block_.attn.core(y, lse, qkv, B, T, attn_dropout(l));
        if (recording_) t_.record_scores(l, qkv, B, T);
    }
    kernels::VqAttnState* vq_states(int l) override;
    void vq_quantized(const VqAttention::Acts& a, float err, int N) override {
        if (train_) t_.add_vq_stats(a, err, N);
    }
    void close(const Tensor& out, const Tensor& b1, const Tensor& b2, const Tensor& residual,
               int layer, int site, int stat) override;
    void record(int l, int site, const float* x, int rows, int width, int ld) override {
        if (recording_)
            t_.coord_->add(t_.coord_->slot(l, site),
                           view(x, {rows, ld}, t_.device_).columns(0, width));
    }
    const float* branch_grad(const float* dres, int N, int layer, int site) override;
    const k::AttnDropout* attn_dropout(int l) override {
        drop_ = t_.attn_dropout(l);
        return train_ && drop_.rate > 0.f ? &drop_ : nullptr;
    }
    void reduce(float* x, std::size_t n) override { t_.mp_->sum(x, n); }
    const k::VqAttnState* vq_start(int l) override {
        return t_.vq_carried_ ? t_.vq_start_.data() + static_cast<std::size_t>(l) * t_.B_ : nullptr;
    }
    float loss_scale() const override { return t_.grad_scale_; }
    ModelComm* model_comm() override { return t_.mp_; }

  private:
    ops::DropoutMask resid_dropout(int layer, int site) const {
        return {.rate = t_.cfg_.dropout_resid,
                .seed = t_.drop_seed_,
                .stream = dropout_stream(t_.drop_step_, layer, site),
                .row0 = t_.drop_row0_ * t_.T_};
    }

    Transformer& t_;
    bool train_, recording_, rerun_;
    k::AttnDropout drop_;
};

k::VqAttnState* Transformer::BlockRun::vq_states(int l) {
    if (!rerun_)
        return t_.vq_states_ ? t_.vq_states_ + static_cast<std::size_t>(l) * t_.vq_state_stride_
                             : nullptr;
    if (!t_.vq_carried_) return nullptr;
    // Copies: the kernel advances what it is given.
    const auto at = t_.vq_start_.begin() + static_cast<std::ptrdiff_t>(l) * t_.B_;
    t_.vq_rerun_.assign(at, at + t_.B_);
    return t_.vq_rerun_.data();
}

void Transformer::BlockRun::close(const Tensor& o, const Tensor& b1, const Tensor& b2,
                                  const Tensor& r, int layer, int site, int stat) {
    const int C = t_.cfg_.d_model;
    t_.mp_->sum(o.f32(), static_cast<std::size_t>(o.numel()));
    if (stat >= 0) record(layer, stat, o.f32(), static_cast<int>(o.shape[0]), C, C);
    if (!train_ || t_.cfg_.dropout_resid <= 0.f) return ops::bias_residual(o, b1, b2, r);
    // Biases join before the mask: dropout(branch + (b1 + b2)), as nn.Dropout after nn.Linear.
    // Their sum goes to dbranch_, which only the backward's branch_grad fills (after this
    // block's recomputation).
    Tensor b = b1;
    if (b2.data) {
        b = view(t_.dbranch_, {C}, t_.device_);
        ops::residual_forward(b, b1, b2);
    }
    if (b.data) ops::add_bias(o, b);
    ops::dropout(o, resid_dropout(layer, site));
    ops::residual_forward(o, o, r);
}

const float* Transformer::BlockRun::branch_grad(const float* dres, int N, int layer, int site) {
    if (!train_ || t_.cfg_.dropout_resid <= 0.f) return dres;
    const Device d = t_.device_;
    const Tensor g = view(t_.dbranch_, {N, t_.cfg_.d_model}, d);
    kernels::copy(g, view(dres, g.shape, d));
    ops::dropout(g, resid_dropout(layer, site));
    return t_.dbranch_;
}

std::string model_device_gap(const ModelConfig& cfg, Device device) {
    if (device == Device::cpu) return "";
    return "";
}

std::string decode_device_gap(const ModelConfig& cfg, Device device) {
    if (std::string gap = model_device_gap(cfg, device); !gap.empty()) return gap;
    if (device != Device::cpu && cfg.vq())
        return "Transformer-VQ's decoder (model.attention vq) runs its prompt model and states "
               "on the host";
    return "";
}

Recompute parse_recompute(const std::string& name) {
    if (name == "none") return Recompute::none;
    if (name == "attention") return Recompute::attention;
    MESHLM_CHECK(name == "block", "recompute '", name, "': expected none, attention or block");
    return Recompute::block;
}

const char* recompute_name(Recompute r) {
    return r == Recompute::none ? "none" : r == Recompute::attention ? "attention" : "block";
}

const std::int32_t* Transformer::device_ids(kernels::DeviceBuffer& dst, const std::int32_t* ids,
                                            int N) const {
    const auto* at = static_cast<const std::int32_t*>(dst.data());
    kernels::copy(view(at, {N}, device_), view(ids, {N}, Device::cpu));
    return at;
}

const BlockTensors& Transformer::block_weights(int l) {
    const BlockTensors& w = views_.w.blocks[l];
    if (precision_ != Precision::bf16) return w;
    // bf16 computes with bf16 copies of the block's vectors too, as ZeRO-3 gathers them in
    // bf16 (parallel/fsdp.h): every layout then computes with the same values.
    block16_ = w;
    float* at = block_vectors16_;
    auto round = [&](float*& v, int n) { round_vector(v, at, n, device_); };
    const int C = cfg_.d_model;
    round(block16_.ln1_w, C), round(block16_.ln1_b, C), round(block16_.ln2_w, C);
    round(block16_.ln2_b, C), round(block16_.qkv_b, block_.attn.qkv_width()),
        round(block16_.proj_b, C);
    round(block16_.fc_b, block_.mlp.h_width()), round(block16_.out_b, C);
    if (vq_on_) {
        round(block16_.vq_u, block_.vq.dk), round(block16_.vq_v, block_.vq.dk);
        round(block16_.c_sum, block_.vq.S * block_.vq.dk), round(block16_.c_count, block_.vq.S);
        round(block16_.vq_r_w, block_.vq.dk * C);
    }
    return block16_;
}

const ModelTensors& Transformer::root_weights() {
    const ModelTensors& w = views_.w;
    if (precision_ != Precision::bf16) return w;
    root16_ = w;
    float* at = block_vectors16_;
    auto round = [&](float*& v, int n) { round_vector(v, at, n, device_); };
    round(root16_.lnf_w, cfg_.d_model), round(root16_.lnf_b, cfg_.d_model);
    round(root16_.head_b, head_.Vl);
    return root16_;
}

void Transformer::embed_dropout(float* x, int N) const {
    ops::dropout(view(x, {N, cfg_.d_model}, device_),
                 {.rate = cfg_.dropout_embd,
                  .seed = drop_seed_,
                  .stream = dropout_stream(drop_step_, -1, kDropEmbd),
                  .row0 = drop_row0_ * T_});
}

k::AttnDropout Transformer::attn_dropout(int layer) const {
    k::AttnDropout d;
    d.rate = cfg_.dropout_attn;
    d.seed = drop_seed_;
    d.stream = dropout_stream(drop_step_, layer, kDropAttnProbs);
    d.row0 = drop_row0_;
    d.head0 = block_.attn.head0;
    d.n_head = block_.attn.H;
    return d;
}

void Transformer::add_vq_stats(const VqAttention::Acts& a, float err, int N) {
    const std::int32_t* z = a.z;
    if (device_ != Device::cpu) {  // the codes, read on the host
        vq_codes_.resize(static_cast<std::size_t>(N));
        kernels::copy(view(vq_codes_.data(), {N}, Device::cpu), view(a.z, {N}, device_));
        z = vq_codes_.data();
    }
    std::vector<int>& used = vq_used_;
    used.assign(block_.vq.S, 0);
    for (int n = 0; n < N; ++n) ++used[z[n]];
    double entropy = 0;
    int codes = 0;
    for (int c : used)
        if (c > 0) {
            const double p = static_cast<double>(c) / N;
            entropy -= p * std::log(p), ++codes;
        }
    const float w = 1.f / static_cast<float>(cfg_.n_layer);
    vq_stats_.commit += w * err;
    vq_stats_.usage += w * static_cast<float>(codes) / static_cast<float>(block_.vq.S);
    vq_stats_.entropy += w * static_cast<float>(entropy);
}

void Transformer::record_scores(int l, const float* qkv, int B, int T) {
    using namespace coord_site;
    const Attention& at = block_.attn;
    // Scores over every (i, j) pair; softmax rows sum to 1, masked entries are 0.
    const double pairs = static_cast<double>(B) * at.Hl * T * T;
    coord_->sum[coord_->slot(l, as)] += ops::attention_score_abs_sum(
        view(qkv, {B * T, at.qkv_width()}, device_), B, T, at.Hl, at.Kl, at.D, at.scale);
    coord_->count[coord_->slot(l, as)] += pairs;
    // Softmax rows sum to 1; other nonlinearities' rows are not counted (no 'ap' record).
    if (at.act.act == k::AttnAct::softmax) {
        coord_->sum[coord_->slot(l, ap)] += static_cast<double>(B) * at.Hl * T;
        coord_->count[coord_->slot(l, ap)] += pairs;
    }
}

const float* Transformer::block_qkv(int layer) const {
    MESHLM_CHECK(recompute_ == Recompute::none,
                 "block_qkv: blocks share their q | k | v buffer under recomputation");
    return blocks_[layer].qkv;
}

void Transformer::add_residual_sums(int layer, const float* x, int N) {
    const std::size_t n = static_cast<std::size_t>(N) * cfg_.d_model;
    (*resid_sums_)[layer] += ops::sum_squares(flat(x, n, device_));
    (*resid_sums_)[cfg_.n_layer + layer] += static_cast<double>(n);
}

float Transformer::forward(const float* params, const std::int32_t* tokens,
                           const std::int32_t* targets, int B, int T, float grad_scale) {
    // The plan is by tokens: any (B, T) with B*T <= max_batch*max_seq and T <= max_seq fits
    // (sequence-length warmup trains more, shorter rows in the same memory).
    MESHLM_CHECK(B >= 1 && T >= 1 && T <= max_seq_ &&
                     static_cast<long>(B) * T <= static_cast<long>(max_batch_) * max_seq_,
                 "batch (", B, ", ", T, ") does not fit the planned (", max_batch_, ", ", max_seq_,
                 ")");
    const int N = B * T;
    const bool train = targets && grad_scale != 0.f;
    MESHLM_CHECK(!vq_states_ || (B <= vq_state_stride_ && cfg_.position != "learned"),
                 "carried VQ states are for at most ", vq_state_stride_,
                 " rows without learned positions");
    // Rows continuing carried states start past position 0 (scaled sinusoids read it).
    if (vq_states_) {
        if (row_pos_.size() < static_cast<std::size_t>(B)) row_pos_.resize(B);
        for (int b = 0; b < B; ++b) row_pos_[b] = vq_states_[b].pos;
    }
    pos0_ = vq_states_ ? row_pos_.data() : nullptr;
    // Copied over the last step's copies: their vectors keep their capacity (no allocation).
    vq_carried_ = vq_states_ && train;
    if (vq_carried_) {
        if (vq_start_.size() < static_cast<std::size_t>(cfg_.n_layer) * B)
            vq_start_.resize(static_cast<std::size_t>(cfg_.n_layer) * B);
        for (int l = 0; l < cfg_.n_layer; ++l)
            for (int b = 0; b < B; ++b)
                vq_start_[static_cast<std::size_t>(l) * B + b] =
                    vq_states_[static_cast<std::size_t>(l) * vq_state_stride_ + b];
    }
    B_ = B;
    T_ = T;
    grad_scale_ = grad_scale;
    vq_stats_ = VqStats{};
    recording_ = coord_ && train;
    if (recording_ && coord_->n_layer != cfg_.n_layer) coord_->reset(cfg_.n_layer);
    using Pass = ParamStream::Pass;
    views_.begin(params, nullptr, Pass::forward);
    const ModelTensors& w = views_.w;
    if (t5_) t5_->expand(w.t5_bias);

    const std::int32_t* host_targets = targets;
    if (device_ != Device::cpu) {  // the ids the embedding and the loss read, on the device
        tokens = device_ids(tokens_dev_, tokens, N);
        if (targets) targets = device_ids(targets_dev_, targets, N);
    }
    embed_layer_.forward(embed_, tokens, w.wte, w.wpe, w.pe_scale, N, T, pos0_);
    if (train && cfg_.dropout_embd > 0.f) embed_dropout(embed_, N);
    const float* x = embed_;
    BlockRun run(*this, train, recording_, false);
    for (int l = 0; l < cfg_.n_layer; ++l) {
        TraceScope trace("forward block", l);
        views_.begin_block(l, Pass::forward);
        block_.forward(run, l, block_weights(l), blocks_[l], x, B, T);
        views_.end_block(l, Pass::forward);
        x = blocks_[l].out;
        if (resid_sums_ && train) add_residual_sums(l, x, N);
    }
    const ModelTensors& r = root_weights();
    block_.norm.forward(lnf_, lnf_mean_, lnf_rstd_, x, r.lnf_w, r.lnf_b, N);
    head_.logits(logits_, lnf_, r.head_w, r.head_b, N);
    if (recording_)
        coord_->add(coord_->logits_slot(),
                    view(logits_, {N, head_.Vl}, device_).columns(0, head_.Vvalid));

    tokens_ = tokens;
    grad_ready_ = false;
    dropped_ = train;
    if (!targets) return 0.f;
    head_.loss(logits_, losses_, row_max_, ce_stats_, targets, N, grad_scale);
    grad_ready_ = grad_scale != 0.f;
    if (device_ != Device::cpu)  // the step's one read-back: the per-token losses
        kernels::copy(view(host_losses_.data(), {N}, Device::cpu), view(losses_, {N}, device_));
    // Rows whose target is < 0 have loss 0 (cross_entropy.h): the count needs the host targets.
    const float* loss = losses();
    double sum = 0;
    int valid = 0;
    for (int n = 0; n < N; ++n)
        if (host_targets[n] >= 0) sum += loss[n], ++valid;
    return valid ? static_cast<float>(sum / valid) : 0.f;
}

void Transformer::backward(const float* params, float* grads) {
    MESHLM_CHECK(grad_ready_, "backward() needs a forward() with targets and grad_scale != 0");
    grad_ready_ = false;
    const int B = B_, T = T_, N = B * T, C = cfg_.d_model;
    using Pass = ParamStream::Pass;
    views_.begin(params, grads, Pass::backward);
    const ModelTensors& g = views_.g;

    const ModelTensors& r = root_weights();
    head_.backward(dln_, g.head_w, g.head_b, logits_, lnf_, r.head_w, N);
    ops::fill(view(dres_, {N, C}, device_), 0.f);
    const float* x_last = cfg_.n_layer ? blocks_.back().out : embed_;
    block_.norm.backward(dres_, g.lnf_w, g.lnf_b, dln_, x_last, r.lnf_w, lnf_mean_, lnf_rstd_, N);
    views_.head_done();
    BlockRun run(*this, dropped_, false, true);
    const BlockGrads s{dres_, dln_, dy_, dqkv_, da_, dh_};
    for (int l = cfg_.n_layer - 1; l >= 0; --l) {
        TraceScope trace("backward block", l);
        views_.begin_block(l, Pass::backward);
        const float* x = l ? blocks_[l - 1].out : embed_;
        const BlockTensors& w = block_weights(l);
        if (recompute_ != Recompute::none)
            block_.recompute(run, l, w, blocks_[l], x, B, T, recompute_ == Recompute::block);
        block_.backward(run, l, w, views_.g.blocks[l], blocks_[l], s, x, B, T);
        views_.end_block(l, Pass::backward);
        if (block_hook_) block_hook_(l);
    }
    if (t5_) t5_->fold(g.t5_bias);  // every block has added its share
    if (dropped_ && cfg_.dropout_embd > 0.f) embed_dropout(dres_, N);
    embed_layer_.backward(g.wte, g.wpe, g.pe_scale, dres_, tokens_, N, T, pos0_);
    views_.embeddings_done();
}

}  // namespace meshlm

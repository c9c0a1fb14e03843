// Transformer forward and hand-written backward; the layers' math is in their headers. Per block
// (N = B*T rows; dres holds dL/d(block output) on entry to the block's backward):
//   sequential forward                       backward
//   ln1 = norm1(x)                           g = drop(dres); dbo += sum g
//   mid = x + drop(reduce(attn(ln1)) + bp)   dln = reduce(mlp^T(g)); dres += norm2^T(dln)
//   ln2 = norm2(mid)                         g = drop(dres); dbp += sum g
//   out = mid + drop(reduce(mlp(ln2)) + bo)  dln = reduce(attn^T(g)); dres += norm1^T(dln)
//   parallel forward                         backward
//   ln1 = norm1(x)                           g = drop(dres); dbp, dbo += sum g
//   out = x + drop(reduce(attn(ln1) +        dln = reduce(mlp^T(g) + attn^T(g))
//                  mlp(ln1)) + bp + bo)      dres += norm1^T(dln)
// reduce() sums over the model ranks (Megatron's g; its backward f is the reduce of dln).
// Head: logits = head(norm_f(x_L)); the loss gradient overwrites the logits in place, then
// dlnf = reduce(dlogits W), dres = norm_f^T(dlnf), and the embedding backward scatters dres into
// wte and wpe (a tied head adds both uses into wte).
#include "meshlm/model/transformer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "meshlm/core/error.h"
#include "meshlm/kernels/device.h"
#include "meshlm/kernels/device_buffer.h"
#include "meshlm/kernels/ops/bf16.h"
#include "meshlm/kernels/ops/bias_backward.h"
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

// Lays activations out in one pass, either counting (arena == nullptr) or taking.
struct Planner {
    Arena* arena;
    std::size_t floats = 0;
    float* take(std::size_t n) {
        floats += Arena::padded(n);
        return arena ? arena->take(n) : nullptr;
    }
};

enum Site { kEmbd = 0, kAttnResid = 1, kMlpResid = 2, kAttnProbs = 3 };

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

// The activation plan's one allocation, with what to do when it does not fit. Off the CPU it is
// `mem`, device memory the arena lays out.
Arena activation_arena(std::size_t floats, int B, int T, Device device,
                       kernels::DeviceBuffer& mem) {
    try {
        if (device == Device::cpu) return Arena(floats);
        mem = kernels::DeviceBuffer(device, DType::f32, {static_cast<std::int64_t>(floats)});
        return Arena(static_cast<float*>(mem.data()), floats);
    } catch (const Error& e) {
        throw Error(detail::concat(
            e.what(), " for the activations of a (", B, ", ", T,
            ") batch; train.recompute: attention or block, or a smaller train.batch_size, needs "
            "less (`meshlm info` shows each)"));
    }
}

}  // namespace

std::string model_device_gap(const ModelConfig& cfg, Device device) {
    if (device == Device::cpu) return "";
    if (cfg.position == "t5_bias")
        return "T5's distance bias (model.position t5_bias) is resolved on the host";
    if (cfg.dropout_attn > 0.f)
        return "dropout on the attention probabilities (model.dropout_attn) has no CUDA kernel "
               "yet";
    if (cfg.position == "scaled_sin")
        return "the scaled sinusoids (model.position scaled_sin) are tabled on the host";
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

// The bf16 operand scratch for (N rows): inputs up to the widest linear input, weights and
// output gradients up to the widest block linear output (the head goes in chunks of it).
Bf16Scratch bf16_scratch_shape(const Attention& attn, const Mlp& mlp, const VqAttention* vq, int C,
                               int N) {
    Bf16Scratch s;
    s.rows = N;
    s.max_in = std::max({C, vq ? vq->dv : attn.y_width(), mlp.Fl});
    s.max_out = std::max({C, vq ? 2 * std::max(vq->dk, vq->dv) : attn.qkv_width(), mlp.h_width()});
    return s;
}

// A block's vectors (norm gains and biases, linear biases) at most, for their bf16 copies; with
// VQ attention also its codebook statistics, biases and position projection. ln_f's and the
// head bias's copies (Vl floats) use the same space outside the blocks.
std::size_t block_vector_floats(const Attention& attn, const Mlp& mlp, const VqAttention* vq,
                                std::size_t C, std::size_t Vl) {
    const std::size_t v = vq ? static_cast<std::size_t>(vq->S) * (vq->dk + 1) + 2 * vq->dk +
                                   static_cast<std::size_t>(vq->dk) * C + 64
                             : attn.qkv_width();
    return std::max(6 * C + v + mlp.h_width(), 2 * C + Vl);
}

std::size_t vq_carried_state_floats(const ModelConfig& cfg, std::size_t rows, int model) {
    const std::size_t dv = static_cast<std::size_t>(cfg.vq_value_width() / model);
    const std::size_t per_layer =
        (static_cast<std::size_t>(cfg.vq_block_len) + static_cast<std::size_t>(cfg.vq_codes)) *
        (1 + dv);  // codes | counts, and values | means
    return rows * static_cast<std::size_t>(cfg.n_layer) * per_layer;
}

std::size_t transformer_activation_floats(const ModelConfig& cfg, int B, int T, int model,
                                          Recompute recompute, Precision precision) {
    // Transformer::plan() takes the same buffers; its constructor checks the two agree.
    const std::size_t N = static_cast<std::size_t>(B) * T, C = cfg.d_model;
    const Attention attn(cfg, model, 0);
    const Mlp mlp(cfg, model);
    const std::size_t Vl = static_cast<std::size_t>(vocab_shard(cfg.vocab_size, model, 0).rows);
    const bool seq = cfg.block == "sequential" && cfg.has_mlp();
    const VqAttention vq(cfg, model);
    const bool vq_on = cfg.vq();
    // A block's buffers in plan() order, and which of them recompute keeps per block.
    struct Buf {
        std::size_t n;
        bool kept;
    };
    const bool keep_y = recompute != Recompute::block, keep_all = recompute == Recompute::none;
    // bf16 keeps the linears' inputs (norm outputs, the MLP's activation) in bf16 only.
    const bool b16 = precision == Precision::bf16;
    auto in16 = [&](std::size_t n) { return b16 ? (n + 1) / 2 : n; };
    const std::size_t qkvw = vq_on ? 0 : attn.qkv_width(), yw = vq_on ? 0 : attn.y_width();
    std::vector<Buf> block = {{in16(N * C), keep_all},
                              {N, keep_all},
                              {N, keep_all},
                              {N * qkvw, keep_all},
                              {N * (vq_on ? 0 : attn.qk_rstd_width()), keep_all},
                              {N * yw, keep_y},
                              {N * (vq_on ? 0 : attn.Hl), keep_y}};
    if (vq_on) {
        block.push_back({vq.core_floats(N), keep_y});
        block.push_back({vq.rest_floats(N), keep_all});
    }
    if (seq)
        for (std::size_t n : {N * C, in16(N * C), N, N}) block.push_back({n, keep_all});
    for (std::size_t n : {N * mlp.h_width(), in16(N * mlp.Fl)}) block.push_back({n, keep_all});
    block.push_back({N * C, true});  // the block's output: the next block's input
    Planner p{nullptr};
    p.take(N * C);
    for (int l = 0; l < cfg.n_layer; ++l)
        for (const Buf& b : block)
            if (b.kept) p.take(b.n);
    if (cfg.n_layer > 0)
        for (const Buf& b : block)
            if (!b.kept) p.take(b.n);
    for (std::size_t n : {N * C, N, N, N * Vl, N, N, 2 * N}) p.take(n);
    for (std::size_t n : {N * C, N * C, N * C, N * yw, N * qkvw, N * mlp.Fl, N * mlp.h_width()})
        p.take(n);
    if (vq_on) p.take(vq.derived_floats()), p.take(vq.scratch_floats(N));
    if (precision == Precision::bf16) {
        const Bf16Scratch s =
            bf16_scratch_shape(attn, mlp, vq_on ? &vq : nullptr, cfg.d_model, static_cast<int>(N));
        for (std::size_t n : {s.x_size(), s.w_size(), s.dy_size()}) p.take((n + 1) / 2);
        p.take(block_vector_floats(attn, mlp, vq_on ? &vq : nullptr, cfg.d_model, Vl));
    }
    return p.floats;
}

Transformer::Transformer(const ModelConfig& cfg, int max_batch, int max_seq, ModelComm* mp,
                         Recompute recompute, Precision precision, Device device)
    : cfg_(cfg),
      device_(device),
      mp_(mp ? mp : &single_),
      layout_(transformer_layout(cfg, mp_->size())),
      embed_layer_(cfg, *mp_),
      norm_(cfg),
      attn_(cfg, mp_->size(), mp_->rank()),
      mlp_(cfg, mp_->size()),
      vq_(cfg, mp_->size()),
      vq_on_(cfg.vq()),
      head_(cfg, *mp_),
      parallel_block_(cfg.block == "parallel"),
      recompute_(recompute),
      precision_(precision),
      max_batch_(max_batch),
      max_seq_(max_seq),
      acts_(activation_arena(
          transformer_activation_floats(cfg, max_batch, max_seq, mp_->size(), recompute, precision),
          max_batch, max_seq, device, acts_mem_)),
      views_(layout_, cfg.n_layer) {
    if (const std::string gap = model_device_gap(cfg, device); !gap.empty())
        throw InvalidInput(detail::concat("this model cannot run on ", kernels::device_name(device),
                                          ": ", gap, "; run it on the CPU"));
    MESHLM_CHECK(max_seq <= cfg.max_seq_len || cfg.position != "learned", "sequence length ",
                 max_seq, " exceeds max_seq_len ", cfg.max_seq_len);
    Planner p{&acts_};
    plan(p);
    MESHLM_CHECK(p.floats == acts_.capacity(), "activation plan of ", p.floats, " floats, counted ",
                 acts_.capacity());
    if (cfg.position == "t5_bias") {
        t5_ = std::make_unique<T5Bias>(cfg, attn_.Hl, max_seq);
        attn_.dist = &t5_->view();
    }
    attn_.place(device);
    embed_layer_.device = norm_.device = mlp_.device = head_.device = device;
    vq_.place(device);
    if (device != Device::cpu) {
        const std::int64_t n = static_cast<std::int64_t>(max_batch) * max_seq;
        tokens_dev_ = kernels::DeviceBuffer(device, DType::i32, {n});
        targets_dev_ = kernels::DeviceBuffer(device, DType::i32, {n});
        host_losses_.resize(static_cast<std::size_t>(n));
    }
}

template <typename P>
void Transformer::plan(P& p) {
    const std::size_t N = static_cast<std::size_t>(max_batch_) * max_seq_, C = cfg_.d_model;
    embed_ = p.take(N * C);
    blocks_.resize(cfg_.n_layer);
    // Under recomputation the dropped buffers are one set shared by every block, taken after
    // the kept ones (transformer_activation_floats counts in the same order).
    const bool keep_y = recompute_ != Recompute::block, keep_all = recompute_ == Recompute::none;
    const bool seq = !parallel_block_ && cfg_.has_mlp();
    const bool b16 = precision_ == Precision::bf16;
    const std::size_t qkvw = vq_on_ ? 0 : attn_.qkv_width(), yw = vq_on_ ? 0 : attn_.y_width();
    // n bf16 values in the float arena.
    auto take16 = [&](std::size_t n) {
        return reinterpret_cast<std::uint16_t*>(p.take((n + 1) / 2));
    };
    auto take_block = [&](BlockActs& b, bool kept) {
        auto take = [&](float*& f, std::size_t n, bool keeps) {
            if (keeps == kept) f = p.take(n);
        };
        // A linear's input: fp32, or with bf16 precision bf16 only (its fp32 is scratch).
        auto take_in = [&](float*& f, std::uint16_t*& f16, std::size_t n, bool keeps) {
            if (!b16) return take(f, n, keeps);
            if (keeps == kept) f16 = take16(n);
        };
        take_in(b.ln1, b.ln1_16, N * C, keep_all);
        take(b.mean1, N, keep_all);
        take(b.rstd1, N, keep_all);
        take(b.qkv, N * qkvw, keep_all);
        take(b.qk_rstd, N * (vq_on_ ? 0 : attn_.qk_rstd_width()), keep_all);
        take(b.y, N * yw, keep_y);
        take(b.lse, N * (vq_on_ ? 0 : attn_.Hl), keep_y);
        if (vq_on_) {
            take(b.vq_core, vq_.core_floats(N), keep_y);
            take(b.vq_rest, vq_.rest_floats(N), keep_all);
        }
        if (seq) {
            take(b.mid, N * C, keep_all);
            take_in(b.ln2, b.ln2_16, N * C, keep_all);
            take(b.mean2, N, keep_all);
            take(b.rstd2, N, keep_all);
        }
        take(b.h, N * mlp_.h_width(), keep_all);
        take_in(b.a, b.a16, N * mlp_.Fl, keep_all);
        take(b.out, N * C, true);
    };
    for (auto& b : blocks_) {
        b = BlockActs{};
        take_block(b, true);
    }
    if (!blocks_.empty()) {
        BlockActs shared{};
        take_block(shared, false);
        for (auto& b : blocks_) {
            for (auto [mine, theirs] : {std::pair{&b.ln1, shared.ln1},
                                        {&b.mean1, shared.mean1},
                                        {&b.rstd1, shared.rstd1},
                                        {&b.qkv, shared.qkv},
                                        {&b.qk_rstd, shared.qk_rstd},
                                        {&b.y, shared.y},
                                        {&b.lse, shared.lse},
                                        {&b.mid, shared.mid},
                                        {&b.ln2, shared.ln2},
                                        {&b.mean2, shared.mean2},
                                        {&b.rstd2, shared.rstd2},
                                        {&b.h, shared.h},
                                        {&b.a, shared.a},
                                        {&b.vq_core, shared.vq_core},
                                        {&b.vq_rest, shared.vq_rest}})
                if (!*mine) *mine = theirs;
            for (auto [mine, theirs] : {std::pair{&b.ln1_16, shared.ln1_16},
                                        {&b.ln2_16, shared.ln2_16},
                                        {&b.a16, shared.a16}})
                if (!*mine) *mine = theirs;
        }
    }
    if (vq_on_)
        for (auto& b : blocks_) b.vq = vq_.acts_at(b.vq_core, b.vq_rest, N);
    lnf_ = p.take(N * C);
    lnf_mean_ = p.take(N);
    lnf_rstd_ = p.take(N);
    logits_ = p.take(N * head_.Vl);
    losses_ = p.take(N);
    row_max_ = p.take(N);
    ce_stats_ = p.take(2 * N);
    dres_ = p.take(N * C);
    dln_ = p.take(N * C);
    dbranch_ = p.take(N * C);
    dy_ = p.take(N * yw);
    dqkv_ = p.take(N * qkvw);
    da_ = p.take(N * mlp_.Fl);
    dh_ = p.take(N * mlp_.h_width());
    if (vq_on_) {
        vq_derived_ = vq_.derived_at(p.take(vq_.derived_floats()));
        vq_scratch_ = p.take(vq_.scratch_floats(N));
    }
    if (precision_ == Precision::bf16) {
        const VqAttention* vq = vq_on_ ? &vq_ : nullptr;
        bf16_ = bf16_scratch_shape(attn_, mlp_, vq, static_cast<int>(C), static_cast<int>(N));
        bf16_.x = take16(bf16_.x_size());
        bf16_.w = take16(bf16_.w_size());
        bf16_.dy = take16(bf16_.dy_size());
        block_vectors16_ = p.take(block_vector_floats(attn_, mlp_, vq, C, head_.Vl));
        attn_.bf16 = mlp_.bf16 = head_.bf16 = vq_.bf16 = &bf16_;
        embed_layer_.bf16 = true;
        // The fp32 of the kept bf16 inputs: backward scratch, free while a forward or a
        // recomputation writes them.
        for (auto& b : blocks_) b.ln1 = b.ln2 = dln_, b.a = da_;
    }
}

const std::int32_t* Transformer::device_ids(kernels::DeviceBuffer& dst, const std::int32_t* ids,
                                            int N) const {
    const auto* at = static_cast<const std::int32_t*>(dst.data());
    kernels::copy(view(at, {N}, device_), view(ids, {N}, Device::cpu));
    return at;
}

void Transformer::keep16(std::uint16_t* dst, const float* src, std::size_t n) const {
    const auto len = static_cast<std::int64_t>(n);
    if (dst) ops::to_bf16(view(dst, {len}, device_), view(src, {len}, device_));
}

void Transformer::bias_grad(float* db, const float* dy, int N) const {
    const int C = cfg_.d_model;
    ops::bias_backward(view(db, {C}, device_), view(dy, {N, C}, device_));
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
    round(block16_.ln2_b, C), round(block16_.qkv_b, attn_.qkv_width()), round(block16_.proj_b, C);
    round(block16_.fc_b, mlp_.h_width()), round(block16_.out_b, C);
    if (vq_on_) {
        round(block16_.vq_u, vq_.dk), round(block16_.vq_v, vq_.dk);
        round(block16_.c_sum, vq_.S * vq_.dk), round(block16_.c_count, vq_.S);
        round(block16_.vq_r_w, vq_.dk * C);
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
                  .stream = dropout_stream(drop_step_, -1, kEmbd),
                  .row0 = drop_row0_ * T_});
}

k::AttnDropout Transformer::attn_dropout(int layer) const {
    k::AttnDropout d;
    d.rate = cfg_.dropout_attn;
    d.seed = drop_seed_;
    d.stream = dropout_stream(drop_step_, layer, kAttnProbs);
    d.row0 = drop_row0_;
    d.head0 = attn_.head0;
    d.n_head = attn_.H;
    return d;
}

void Transformer::record(int l, int site, const float* x, int rows, int width, int ld) {
    if (recording_)
        coord_->add(coord_->slot(l, site), view(x, {rows, ld}, device_).columns(0, width));
}

void Transformer::close_branch(float* out, const float* b1, const float* b2, const float* residual,
                               int N, int layer, int site, bool train, int stat) {
    const int C = cfg_.d_model;
    const Device d = device_;
    if (!b1) std::swap(b1, b2);  // either bias may be absent
    mp_->sum(out, static_cast<std::size_t>(N) * C);
    if (stat >= 0) record(layer, stat, out, N, C, C);
    const Tensor o = view(out, {N, C}, d), r = view(residual, {N, C}, d);
    auto bias = [&](const float* b) { return b ? view(b, {C}, d) : Tensor{}; };
    const float rate = cfg_.dropout_resid;
    if (!train || rate <= 0.f) return ops::bias_residual(o, bias(b1), bias(b2), r);
    // Biases join before the mask: dropout(branch + (b1 + b2)), as nn.Dropout after nn.Linear.
    // Their sum goes to dbranch_, which only the backward's branch_grad fills (after this
    // block's recomputation).
    if (b2) {
        ops::residual_forward(view(dbranch_, {C}, d), bias(b1), bias(b2));
        b1 = dbranch_;
    }
    if (b1) ops::add_bias(o, bias(b1));
    ops::dropout(o, {.rate = rate,
                     .seed = drop_seed_,
                     .stream = dropout_stream(drop_step_, layer, site),
                     .row0 = drop_row0_ * T_});
    ops::residual_forward(o, o, r);
}

const float* Transformer::branch_grad(int N, int layer, int site) {
    if (!dropped_ || cfg_.dropout_resid <= 0.f) return dres_;
    const Device d = device_;
    const Tensor g = view(dbranch_, {N, cfg_.d_model}, d);
    kernels::copy(g, view(dres_, g.shape, d));
    ops::dropout(g, {.rate = cfg_.dropout_resid,
                     .seed = drop_seed_,
                     .stream = dropout_stream(drop_step_, layer, site),
                     .row0 = drop_row0_ * T_});
    return dbranch_;
}

void Transformer::block_forward(int l, const float* x, int B, int T, bool train) {
    const int N = B * T;
    const BlockTensors& w = block_weights(l);
    BlockActs& a = blocks_[l];
    const k::AttnDropout drop = attn_dropout(l);
    const k::AttnDropout* pdrop = train && drop.rate > 0.f ? &drop : nullptr;
    using namespace coord_site;
    const int C = cfg_.d_model, Q = attn_.Hl * attn_.D, KV = attn_.Kl * attn_.D,
              W = attn_.qkv_width();
    norm_.forward(a.ln1, a.mean1, a.rstd1, x, w.ln1_w, w.ln1_b, N);
    record(l, ax, a.ln1, N, C, C);
    keep16(a.ln1_16, a.ln1, static_cast<std::size_t>(N) * C);
    if (vq_on_) {
        vq_.derive(vq_derived_, w);
        float* branch = cfg_.has_mlp() ? a.mid : a.out;
        k::VqAttnState* st =
            vq_states_ ? vq_states_ + static_cast<std::size_t>(l) * vq_state_stride_ : nullptr;
        const float err = vq_.forward(branch, a.vq, vq_derived_, vq_scratch_, a.ln1, a.ln1_16, w, B,
                                      T, false, st);
        if (train) add_vq_stats(a.vq, err, N);
        close_branch(branch, w.proj_b, nullptr, x, N, l, kAttnResid, train, ar);
        if (cfg_.has_mlp()) mlp_branch(l, w, a, N, train);
        return;
    }
    // Attention's stages one by one (Attention::forward), so the check sees q, k, v before
    // and after rotary.
    attn_.project(a.qkv, a.ln1, w, N, a.ln1_16);
    record(l, aq, a.qkv, N, Q, W), record(l, ak, a.qkv + Q, N, KV, W);
    record(l, av, a.qkv + Q + KV, N, KV, W);
    attn_.rotate(a.qkv, nullptr, N, T, a.qk_rstd);
    if (attn_.rope) record(l, aqr, a.qkv, N, Q, W), record(l, akr, a.qkv + Q, N, KV, W);
    attn_.core(a.y, a.lse, a.qkv, B, T, pdrop);
    if (recording_) {
        // Scores over every (i, j) pair; softmax rows sum to 1, masked entries are 0.
        const double pairs = static_cast<double>(B) * attn_.Hl * T * T;
        coord_->sum[coord_->slot(l, as)] += ops::attention_score_abs_sum(
            view(a.qkv, {N, W}, device_), B, T, attn_.Hl, attn_.Kl, attn_.D, attn_.scale);
        coord_->count[coord_->slot(l, as)] += pairs;
        // Softmax rows sum to 1; other nonlinearities' rows are not counted (no 'ap' record).
        if (attn_.act.act == k::AttnAct::softmax) {
            coord_->sum[coord_->slot(l, ap)] += static_cast<double>(B) * attn_.Hl * T;
            coord_->count[coord_->slot(l, ap)] += pairs;
        }
    }
    record(l, ao, a.y, N, Q, Q);
    if (parallel_block_) {
        attn_.project_out(a.out, a.y, w, N, false);
        record(l, fx, a.ln1, N, C, C);
        mlp_.up(a.h, a.a, a.ln1, w, N, a.ln1_16, a.a16);
        record(l, fh, a.h, N, mlp_.h_width(), mlp_.h_width()),
            record(l, fa, a.a, N, mlp_.Fl, mlp_.Fl);
        mlp_.down(a.out, a.a, w, N, true, a.a16);
        close_branch(a.out, w.proj_b, w.out_b, x, N, l, kAttnResid, train, fr);
        return;
    }
    if (!cfg_.has_mlp()) {
        attn_.project_out(a.out, a.y, w, N, false);
        close_branch(a.out, w.proj_b, nullptr, x, N, l, kAttnResid, train, ar);
        return;
    }
    attn_.project_out(a.mid, a.y, w, N, false);
    close_branch(a.mid, w.proj_b, nullptr, x, N, l, kAttnResid, train, ar);
    mlp_branch(l, w, a, N, train);
}

void Transformer::add_vq_stats(const VqAttention::Acts& a, float err, int N) {
    const std::int32_t* z = a.z;
    if (device_ != Device::cpu) {  // the codes, read on the host
        vq_codes_.resize(static_cast<std::size_t>(N));
        kernels::copy(view(vq_codes_.data(), {N}, Device::cpu), view(a.z, {N}, device_));
        z = vq_codes_.data();
    }
    std::vector<int>& used = vq_used_;
    used.assign(vq_.S, 0);
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
    vq_stats_.usage += w * static_cast<float>(codes) / static_cast<float>(vq_.S);
    vq_stats_.entropy += w * static_cast<float>(entropy);
}

void Transformer::mlp_branch(int l, const BlockTensors& w, BlockActs& a, int N, bool train) {
    using namespace coord_site;
    const int C = cfg_.d_model;
    norm_.forward(a.ln2, a.mean2, a.rstd2, a.mid, w.ln2_w, w.ln2_b, N);
    record(l, fx, a.ln2, N, C, C);
    keep16(a.ln2_16, a.ln2, static_cast<std::size_t>(N) * C);
    mlp_.up(a.h, a.a, a.ln2, w, N, a.ln2_16, a.a16);
    record(l, fh, a.h, N, mlp_.h_width(), mlp_.h_width()), record(l, fa, a.a, N, mlp_.Fl, mlp_.Fl);
    mlp_.down(a.out, a.a, w, N, false, a.a16);
    close_branch(a.out, w.out_b, nullptr, a.mid, N, l, kMlpResid, train, fr);
}

void Transformer::block_backward(int l, const float* x, int B, int T) {
    const int N = B * T, C = cfg_.d_model;
    const std::size_t NC = static_cast<std::size_t>(N) * C;
    const BlockTensors& w = block_weights(l);
    BlockTensors& g = views_.g.blocks[l];
    const BlockActs& a = blocks_[l];
    const k::AttnDropout drop = attn_dropout(l);
    const k::AttnDropout* pdrop = dropped_ && drop.rate > 0.f ? &drop : nullptr;
    if (parallel_block_) {
        const float* gb = branch_grad(N, l, kAttnResid);
        if (g.proj_b) bias_grad(g.proj_b, gb, N);
        if (g.out_b) bias_grad(g.out_b, gb, N);
        mlp_.backward(dln_, g, da_, dh_, gb, a.ln1, a.h, a.a, w, N, false, a.ln1_16, a.a16);
        attn_.backward(dln_, g, dy_, dqkv_, gb, a.ln1, a.qkv, a.y, a.lse, w, B, T, pdrop, true,
                       a.ln1_16, a.qk_rstd);
        mp_->sum(dln_, NC);
        norm_.backward(dres_, g.ln1_w, g.ln1_b, dln_, x, w.ln1_w, a.mean1, a.rstd1, N);
        return;
    }
    if (cfg_.has_mlp()) {
        const float* gm = branch_grad(N, l, kMlpResid);
        if (g.out_b) bias_grad(g.out_b, gm, N);
        mlp_.backward(dln_, g, da_, dh_, gm, a.ln2, a.h, a.a, w, N, false, a.ln2_16, a.a16);
        mp_->sum(dln_, NC);
        norm_.backward(dres_, g.ln2_w, g.ln2_b, dln_, a.mid, w.ln2_w, a.mean2, a.rstd2, N);
    }
    const float* ga = branch_grad(N, l, kAttnResid);
    if (g.proj_b) bias_grad(g.proj_b, ga, N);
    if (vq_on_) {
        vq_.derive(vq_derived_, w);
        vq_.backward(dln_, g, ga, a.vq, vq_derived_, vq_scratch_, a.ln1, a.ln1_16, w, B, T,
                     grad_scale_, false, mp_,
                     vq_carried_ ? vq_start_.data() + static_cast<std::size_t>(l) * B : nullptr);
    } else {
        attn_.backward(dln_, g, dy_, dqkv_, ga, a.ln1, a.qkv, a.y, a.lse, w, B, T, pdrop, false,
                       a.ln1_16, a.qk_rstd);
    }
    mp_->sum(dln_, NC);
    norm_.backward(dres_, g.ln1_w, g.ln1_b, dln_, x, w.ln1_w, a.mean1, a.rstd1, N);
}

void Transformer::block_recompute(int l, const float* x, int B, int T) {
    if (recompute_ == Recompute::none) return;
    const int N = B * T;
    const BlockTensors& w = block_weights(l);
    BlockActs& a = blocks_[l];
    norm_.forward(a.ln1, a.mean1, a.rstd1, x, w.ln1_w, w.ln1_b, N);
    keep16(a.ln1_16, a.ln1, static_cast<std::size_t>(N) * cfg_.d_model);
    if (vq_on_) {
        // `attention` kept the core's output (o, lse): only the projections and codes rerun.
        vq_.derive(vq_derived_, w);
        vq_.project_in(a.vq, vq_derived_, a.ln1, a.ln1_16, w, N);
        if (recompute_ == Recompute::block) {
            // From the states the forward started from (truncated backprop), on copies: the
            // kernel advances what it is given.
            k::VqAttnState* st = nullptr;
            if (vq_carried_) {
                vq_rerun_.assign(vq_start_.begin() + static_cast<std::ptrdiff_t>(l) * B,
                                 vq_start_.begin() + static_cast<std::ptrdiff_t>(l + 1) * B);
                st = vq_rerun_.data();
            }
            vq_.core(a.vq, vq_derived_, B, T, st);
        }
        if (!cfg_.has_mlp()) return;
        vq_.project_out(a.mid, a.vq, vq_scratch_, w, N, false);
        close_branch(a.mid, w.proj_b, nullptr, x, N, l, kAttnResid, dropped_);
        norm_.forward(a.ln2, a.mean2, a.rstd2, a.mid, w.ln2_w, w.ln2_b, N);
        keep16(a.ln2_16, a.ln2, static_cast<std::size_t>(N) * cfg_.d_model);
        mlp_.up(a.h, a.a, a.ln2, w, N, a.ln2_16, a.a16);
        return;
    }
    attn_.project_in(a.qkv, a.ln1, w, N, T, a.ln1_16, a.qk_rstd);
    if (recompute_ == Recompute::block) {
        const k::AttnDropout drop = attn_dropout(l);
        attn_.core(a.y, a.lse, a.qkv, B, T, dropped_ && drop.rate > 0.f ? &drop : nullptr);
    }
    if (parallel_block_) {
        mlp_.up(a.h, a.a, a.ln1, w, N, a.ln1_16, a.a16);
        return;
    }
    if (!cfg_.has_mlp()) return;  // a block of attention only
    // The MLP's input is norm2 of the residual after attention, so that branch is rerun whole.
    attn_.project_out(a.mid, a.y, w, N, false);
    close_branch(a.mid, w.proj_b, nullptr, x, N, l, kAttnResid, dropped_);
    norm_.forward(a.ln2, a.mean2, a.rstd2, a.mid, w.ln2_w, w.ln2_b, N);
    keep16(a.ln2_16, a.ln2, static_cast<std::size_t>(N) * cfg_.d_model);
    mlp_.up(a.h, a.a, a.ln2, w, N, a.ln2_16, a.a16);
}

const float* Transformer::block_qkv(int layer) const {
    MESHLM_CHECK(recompute_ == Recompute::none,
                 "block_qkv: blocks share their q | k | v buffer under recomputation");
    return blocks_[layer].qkv;
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
    for (int l = 0; l < cfg_.n_layer; ++l) {
        views_.begin_block(l, Pass::forward);
        block_forward(l, x, B, T, train);
        views_.end_block(l, Pass::forward);
        x = blocks_[l].out;
    }
    const ModelTensors& r = root_weights();
    norm_.forward(lnf_, lnf_mean_, lnf_rstd_, x, r.lnf_w, r.lnf_b, N);
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
    norm_.backward(dres_, g.lnf_w, g.lnf_b, dln_, x_last, r.lnf_w, lnf_mean_, lnf_rstd_, N);
    views_.head_done();
    for (int l = cfg_.n_layer - 1; l >= 0; --l) {
        views_.begin_block(l, Pass::backward);
        const float* x = l ? blocks_[l - 1].out : embed_;
        block_recompute(l, x, B, T);
        block_backward(l, x, B, T);
        views_.end_block(l, Pass::backward);
        if (block_hook_) block_hook_(l);
    }
    if (t5_) t5_->fold(g.t5_bias);  // every block has added its share
    if (dropped_ && cfg_.dropout_embd > 0.f) embed_dropout(dres_, N);
    embed_layer_.backward(g.wte, g.wpe, g.pe_scale, dres_, tokens_, N, T, pos0_);
    views_.embeddings_done();
}

}  // namespace meshlm

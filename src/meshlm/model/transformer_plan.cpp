// The Transformer's memory: the activation plan (what a forward and backward keep, in one arena
// taken in the order transformer_activation_floats counts) and the constructor that lays it out.
#include <algorithm>
#include <utility>

#include "meshlm/core/error.h"
#include "meshlm/kernels/device.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm {

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

// Points block b's buffers that recomputation drops (null in b) at the one shared set.
void share_dropped(BlockActs& b, const BlockActs& shared) {
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
    for (auto [mine, theirs] :
         {std::pair{&b.ln1_16, shared.ln1_16}, {&b.ln2_16, shared.ln2_16}, {&b.a16, shared.a16}})
        if (!*mine) *mine = theirs;
}

}  // namespace

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
      block_(cfg, mp_->size(), mp_->rank()),
      vq_on_(cfg.vq()),
      head_(cfg, *mp_),
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
        t5_ = std::make_unique<T5Bias>(cfg, block_.attn.Hl, max_seq, device);
        block_.attn.dist = &t5_->view();
    }
    block_.place(device);
    embed_layer_.device = head_.device = device;
    if (device != Device::cpu) {
        const std::int64_t n = static_cast<std::int64_t>(max_batch) * max_seq;
        tokens_dev_ = kernels::DeviceBuffer(device, DType::i32, {n});
        targets_dev_ = kernels::DeviceBuffer(device, DType::i32, {n});
        host_losses_.resize(static_cast<std::size_t>(n));
    }
}

template <typename P>
void Transformer::plan_blocks(P& p) {
    const std::size_t N = static_cast<std::size_t>(max_batch_) * max_seq_, C = cfg_.d_model;
    blocks_.resize(cfg_.n_layer);
    // Under recomputation the dropped buffers are one set shared by every block, taken after
    // the kept ones (transformer_activation_floats counts in the same order).
    const bool keep_y = recompute_ != Recompute::block, keep_all = recompute_ == Recompute::none;
    const bool seq = !block_.parallel && cfg_.has_mlp();
    const bool b16 = precision_ == Precision::bf16;
    const std::size_t qkvw = vq_on_ ? 0 : block_.attn.qkv_width(),
                      yw = vq_on_ ? 0 : block_.attn.y_width();
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
        take(b.qk_rstd, N * (vq_on_ ? 0 : block_.attn.qk_rstd_width()), keep_all);
        take(b.y, N * yw, keep_y);
        take(b.lse, N * (vq_on_ ? 0 : block_.attn.Hl), keep_y);
        if (vq_on_) {
            take(b.vq_core, block_.vq.core_floats(N), keep_y);
            take(b.vq_rest, block_.vq.rest_floats(N), keep_all);
        }
        if (seq) {
            take(b.mid, N * C, keep_all);
            take_in(b.ln2, b.ln2_16, N * C, keep_all);
            take(b.mean2, N, keep_all);
            take(b.rstd2, N, keep_all);
        }
        take(b.h, N * block_.mlp.h_width(), keep_all);
        take_in(b.a, b.a16, N * block_.mlp.Fl, keep_all);
        take(b.out, N * C, true);
    };
    for (auto& b : blocks_) {
        b = BlockActs{};
        take_block(b, true);
    }
    if (!blocks_.empty()) {
        BlockActs shared{};
        take_block(shared, false);
        for (auto& b : blocks_) share_dropped(b, shared);
    }
    if (vq_on_)
        for (auto& b : blocks_) b.vq = block_.vq.acts_at(b.vq_core, b.vq_rest, N);
}

template <typename P>
void Transformer::plan(P& p) {
    const std::size_t N = static_cast<std::size_t>(max_batch_) * max_seq_, C = cfg_.d_model;
    const std::size_t qkvw = vq_on_ ? 0 : block_.attn.qkv_width(),
                      yw = vq_on_ ? 0 : block_.attn.y_width();
    auto take16 = [&](std::size_t n) {  // n bf16 values in the float arena
        return reinterpret_cast<std::uint16_t*>(p.take((n + 1) / 2));
    };
    embed_ = p.take(N * C);
    plan_blocks(p);
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
    da_ = p.take(N * block_.mlp.Fl);
    dh_ = p.take(N * block_.mlp.h_width());
    if (vq_on_) {
        block_.vq_derived = block_.vq.derived_at(p.take(block_.vq.derived_floats()));
        block_.vq_scratch = p.take(block_.vq.scratch_floats(N));
    }
    if (precision_ == Precision::bf16) {
        const VqAttention* vq = vq_on_ ? &block_.vq : nullptr;
        bf16_ = bf16_scratch_shape(block_.attn, block_.mlp, vq, static_cast<int>(C),
                                   static_cast<int>(N));
        bf16_.x = take16(bf16_.x_size());
        bf16_.w = take16(bf16_.w_size());
        bf16_.dy = take16(bf16_.dy_size());
        block_vectors16_ = p.take(block_vector_floats(block_.attn, block_.mlp, vq, C, head_.Vl));
        block_.attn.bf16 = block_.mlp.bf16 = head_.bf16 = block_.vq.bf16 = &bf16_;
        embed_layer_.bf16 = true;
        // The fp32 of the kept bf16 inputs: backward scratch, free while a forward or a
        // recomputation writes them.
        for (auto& b : blocks_) b.ln1 = b.ln2 = dln_, b.a = da_;
    }
}

}  // namespace meshlm

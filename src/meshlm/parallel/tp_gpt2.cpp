// Tensor-parallel GPT-2 forward and backward: gpt2.cpp's math with local widths (Cl = C/M,
// Hl = H/M, Fl = F/M, Vl = V/M) and the all-reduces that make the sharded pieces add up.
//   forward                                      backward
//   x     = all_reduce(wte_r[tok]) + wpe         (dres replicated, as in gpt2.cpp)
//   qkv_r = LN1(x) Wqkv_r^T + b_r                dfch_gelu_r = dres Wmp_r; dWmp_r += dres^T ..
//   mid   = all_reduce(attn(qkv_r) Wap_r^T)      dln = all_reduce(dfch_r Wfc_r)  (f backward)
//           + b_ap + x                           dres += LN2^T(dln)
//   out   = all_reduce(gelu(fch_r) Wmp_r^T)      datty_r = dres Wap_r; dqkv_r = attn^T(..)
//           + b_mp + mid                         dln = all_reduce(dqkv_r Wqkv_r); LN1^T
//   logits_r = LN_f(x_L) wte_r^T  (N, Vl)        dlnf = all_reduce(dlogits_r wte_r)
// The row-parallel biases are added once, after the all-reduce; their gradients (sums of the
// replicated dres) are replicated like the LayerNorms'.
#include "meshlm/parallel/tp_gpt2.h"

#include <cstring>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/vocab_parallel.h"
#include "meshlm/parallel/tp_layout.h"
#include "meshlm/parallel/traffic.h"

namespace meshlm {
namespace k = kernels;

namespace {

struct Planner {
    Arena* arena;
    std::size_t floats = 0;
    float* take(std::size_t n) {
        floats += Arena::padded(n);
        return arena ? arena->take(n) : nullptr;
    }
};

}  // namespace

std::uint64_t tp_step_bytes(const ModelConfig& cfg, int model, int rank, int B, int T) {
    const std::size_t N = static_cast<std::size_t>(B) * T, NC = N * cfg.d_model;
    const int wide = 2 + 4 * cfg.n_layer;  // embedding, head backward, 2 + 2 per block
    return wide * traffic_all_reduce(NC, model, rank, sizeof(float)) +
           traffic_all_reduce(N, model, rank, sizeof(float)) +
           traffic_all_reduce(2 * N, model, rank, sizeof(float));
}

TensorParallelGPT2::TensorParallelGPT2(const ModelConfig& cfg, Comm& comm, int max_batch,
                                       int max_seq)
    : cfg_(cfg),
      comm_(comm),
      M_(comm.size()),
      Cl_(cfg.d_model / M_),
      Hl_(cfg.n_head / M_),
      Fl_(cfg.mlp_width() / M_),
      Vl_(cfg.vocab_size / M_),
      v0_(comm.rank() * Vl_),
      layout_(tp_local_layout(cfg, M_)),  // checks that every split divides
      max_batch_(max_batch),
      max_seq_(max_seq),
      acts_(0),
      views_(layout_, cfg.n_layer) {
    MESHLM_CHECK(max_seq <= cfg.max_seq_len, "sequence length ", max_seq, " exceeds max_seq_len ",
                 cfg.max_seq_len);
    const std::size_t N = static_cast<std::size_t>(max_batch) * max_seq, C = cfg.d_model;
    // Two passes over one plan: count, then take.
    auto plan = [&](Planner& p) {
        embed_ = p.take(N * C);
        blocks_.resize(cfg.n_layer);
        for (auto& b : blocks_) {
            b.ln1 = p.take(N * C);
            b.ln1_mean = p.take(N);
            b.ln1_rstd = p.take(N);
            b.qkv = p.take(N * 3 * Cl_);
            b.atty = p.take(N * Cl_);
            b.lse = p.take(N * Hl_);
            b.res_mid = p.take(N * C);
            b.ln2 = p.take(N * C);
            b.ln2_mean = p.take(N);
            b.ln2_rstd = p.take(N);
            b.fch = p.take(N * Fl_);
            b.fch_gelu = p.take(N * Fl_);
            b.res_out = p.take(N * C);
        }
        lnf_ = p.take(N * C);
        lnf_mean_ = p.take(N);
        lnf_rstd_ = p.take(N);
        logits_ = p.take(N * Vl_);
        losses_ = p.take(N);
        row_max_ = p.take(N);
        ce_stats_ = p.take(2 * N);
        dres_ = p.take(N * C);
        dln_ = p.take(N * C);
        datty_ = p.take(N * Cl_);
        dqkv_ = p.take(N * 3 * Cl_);
        dfch_ = p.take(N * Fl_);
        dfch_gelu_ = p.take(N * Fl_);
    };
    Planner count{nullptr};
    plan(count);
    acts_ = Arena(count.floats);
    Planner take{&acts_};
    plan(take);
}

void TensorParallelGPT2::close_row_parallel(float* out, const float* bias, const float* residual,
                                            int N) {
    const int C = cfg_.d_model;
    comm_.all_reduce_sum(out, static_cast<std::size_t>(N) * C);
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) {
        float* o = out + static_cast<std::size_t>(n) * C;
        const float* r = residual + static_cast<std::size_t>(n) * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) o[c] = (o[c] + bias[c]) + r[c];
    }
}

float TensorParallelGPT2::forward(const float* params, const std::int32_t* tokens,
                                  const std::int32_t* targets, int B, int T, float grad_scale) {
    MESHLM_CHECK(B >= 1 && T >= 1 && T <= max_seq_ &&
                     static_cast<long>(B) * T <= static_cast<long>(max_batch_) * max_seq_,
                 "batch (", B, ", ", T, ") does not fit the planned (", max_batch_, ", ", max_seq_,
                 ")");
    const int N = B * T, C = cfg_.d_model;
    const std::size_t NC = static_cast<std::size_t>(N) * C;
    const float eps = cfg_.ln_eps;
    using Pass = ParamStream::Pass;
    views_.begin(params, nullptr, Pass::forward);
    const GPT2Weights& w = views_.w;

    // Vocabulary-parallel embedding: one rank holds each token's row, the others add zeros.
    k::embedding_forward_vocab_range(embed_, tokens, w.wte, v0_, Vl_, N, C);
    comm_.all_reduce_sum(embed_, NC);
    k::position_embedding_forward(embed_, w.wpe, N, T, C);
    const float* x = embed_;
    for (int l = 0; l < cfg_.n_layer; ++l) {
        views_.begin_block(l, Pass::forward);
        const BlockWeights& bw = w.blocks[l];
        BlockActs& a = blocks_[l];
        k::layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, x, bw.ln1_w, bw.ln1_b, N, C, eps);
        k::linear_forward(a.qkv, a.ln1, bw.qkv_w, bw.qkv_b, N, C, 3 * Cl_);
        k::attention_forward(a.atty, a.lse, a.qkv, B, T, Hl_, Hl_, Cl_ / Hl_, nullptr);
        k::linear_forward(a.res_mid, a.atty, bw.attn_proj_w, nullptr, N, Cl_, C);
        close_row_parallel(a.res_mid, bw.attn_proj_b, x, N);
        k::layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.res_mid, bw.ln2_w, bw.ln2_b, N, C,
                             eps);
        k::linear_forward(a.fch, a.ln2, bw.fc_w, bw.fc_b, N, C, Fl_);
        k::activation_forward(k::Act::gelu_tanh, a.fch_gelu, a.fch,
                              static_cast<std::size_t>(N) * Fl_);
        k::linear_forward(a.res_out, a.fch_gelu, bw.mlp_proj_w, nullptr, N, Fl_, C);
        close_row_parallel(a.res_out, bw.mlp_proj_b, a.res_mid, N);
        views_.end_block(l, Pass::forward);
        x = a.res_out;
    }
    k::layernorm_forward(lnf_, lnf_mean_, lnf_rstd_, x, w.lnf_w, w.lnf_b, N, C, eps);
    k::linear_forward(logits_, lnf_, w.wte, nullptr, N, C, Vl_);

    tokens_ = tokens;
    B_ = B;
    T_ = T;
    grad_ready_ = false;
    if (!targets) return 0.f;
    // Vocabulary-parallel cross-entropy: global max, then global sum of exps and target logit.
    k::ce_row_max(row_max_, logits_, targets, N, Vl_, Vl_);
    comm_.all_reduce_max(row_max_, N);
    k::ce_row_sums(ce_stats_, logits_, targets, row_max_, v0_, N, Vl_, Vl_, grad_scale != 0.f);
    comm_.all_reduce_sum(ce_stats_, 2 * static_cast<std::size_t>(N));
    k::ce_finish(logits_, losses_, targets, row_max_, ce_stats_, v0_, N, Vl_, Vl_, grad_scale);
    grad_ready_ = grad_scale != 0.f;
    double sum = 0;
    int valid = 0;
    for (int n = 0; n < N; ++n)
        if (targets[n] >= 0) sum += losses_[n], ++valid;
    return valid ? static_cast<float>(sum / valid) : 0.f;
}

void TensorParallelGPT2::backward(const float* params, float* grads) {
    MESHLM_CHECK(grad_ready_, "backward() needs a forward() with targets and grad_scale != 0");
    grad_ready_ = false;
    const int B = B_, T = T_, N = B * T, C = cfg_.d_model;
    const std::size_t NC = static_cast<std::size_t>(N) * C;
    using Pass = ParamStream::Pass;
    views_.begin(params, grads, Pass::backward);
    const GPT2Weights &w = views_.w, &g = views_.g;

    // The head is column-parallel over the vocabulary: its input gradient is all-reduced.
    k::linear_backward(dln_, g.wte, nullptr, logits_, lnf_, w.wte, N, C, Vl_);
    comm_.all_reduce_sum(dln_, NC);
    std::memset(dres_, 0, NC * sizeof(float));
    const float* x_last = cfg_.n_layer ? blocks_.back().res_out : embed_;
    k::layernorm_backward(dres_, g.lnf_w, g.lnf_b, dln_, x_last, w.lnf_w, lnf_mean_, lnf_rstd_, N,
                          C);
    views_.head_done();
    for (int l = cfg_.n_layer - 1; l >= 0; --l) {
        views_.begin_block(l, Pass::backward);
        const BlockWeights& bw = w.blocks[l];
        const BlockWeights& bg = g.blocks[l];
        const BlockActs& a = blocks_[l];
        const float* x = l ? blocks_[l - 1].res_out : embed_;
        k::linear_backward(dfch_gelu_, bg.mlp_proj_w, bg.mlp_proj_b, dres_, a.fch_gelu,
                           bw.mlp_proj_w, N, Fl_, C);
        k::activation_backward(k::Act::gelu_tanh, dfch_, a.fch, dfch_gelu_,
                               static_cast<std::size_t>(N) * Fl_);
        k::linear_backward(dln_, bg.fc_w, bg.fc_b, dfch_, a.ln2, bw.fc_w, N, C, Fl_);
        comm_.all_reduce_sum(dln_, NC);
        k::layernorm_backward(dres_, bg.ln2_w, bg.ln2_b, dln_, a.res_mid, bw.ln2_w, a.ln2_mean,
                              a.ln2_rstd, N, C);
        k::linear_backward(datty_, bg.attn_proj_w, bg.attn_proj_b, dres_, a.atty, bw.attn_proj_w, N,
                           Cl_, C);
        k::attention_backward(dqkv_, datty_, a.atty, a.lse, a.qkv, B, T, Hl_, Hl_, Cl_ / Hl_,
                              nullptr);
        k::linear_backward(dln_, bg.qkv_w, bg.qkv_b, dqkv_, a.ln1, bw.qkv_w, N, C, 3 * Cl_);
        comm_.all_reduce_sum(dln_, NC);
        k::layernorm_backward(dres_, bg.ln1_w, bg.ln1_b, dln_, x, bw.ln1_w, a.ln1_mean, a.ln1_rstd,
                              N, C);
        views_.end_block(l, Pass::backward);
    }
    // Embedding backward: wpe from the replicated dres, wte only for this rank's tokens.
    k::embedding_backward_vocab_range(g.wte, dres_, tokens_, v0_, Vl_, N, C);
    k::position_embedding_backward(g.wpe, dres_, N, T, C);
    views_.embeddings_done();
}

}  // namespace meshlm

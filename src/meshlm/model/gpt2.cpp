// GPT-2 forward and hand-written backward. Per block (N = B*T rows, widths in comments):
//   forward                                    backward (dres holds dL/d(residual))
//   ln1  = LN(x)                               dfch_gelu = dres W_mlp_proj;  dW_mlp_proj += dres^T
//   fch_gelu qkv  = ln1 W_qkv^T + b          (3C)       dfch = gelu'(fch) * dfch_gelu atty =
//   attention(qkv)           (C)        dln = dfch W_fc;  dW_fc += dfch^T ln2 mid  = x + atty
//   W_ap^T + b                 dres += LN2^T(dln)          -> dL/d(mid) ln2  = LN(mid) datty = dres
//   W_ap;  dW_ap += dres^T atty fch  = ln2 W_fc^T + b           (4C)       dqkv =
//   attention^T(datty) out  = mid + gelu(fch) W_mp^T + b          dln = dqkv W_qkv;  dW_qkv +=
//   dqkv^T ln1
//                                              dres += LN1^T(dln)          -> dL/dx
// Head: logits = LN_f(x_L) wte^T; the loss gradient overwrites the logits in place, then
// dlnf = dlogits wte, dwte += dlogits^T lnf, dres = LN_f^T(dlnf), and the embedding
// backward scatters dres into dwte and dwpe (the tie adds both uses into dwte).
#include "meshlm/model/gpt2.h"

#include <cstring>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"

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

}  // namespace

std::size_t gpt2_activation_floats(const ModelConfig& cfg, int B, int T) {
    const std::size_t N = static_cast<std::size_t>(B) * T, C = cfg.d_model, F = cfg.mlp_width();
    Planner p{nullptr};
    p.take(N * C);  // embed
    for (int l = 0; l < cfg.n_layer; ++l) {
        for (std::size_t n : {N * C, N, N, N * 3 * C, N * C, N * cfg.n_head, N * C, N * C, N, N,
                              N * F, N * F, N * C})
            p.take(n);
    }
    for (std::size_t n : {N * C, N, N, N * cfg.vocab_size, N}) p.take(n);
    for (std::size_t n : {N * C, N * C, N * C, N * 3 * C, N * F, N * F}) p.take(n);
    return p.floats;
}

GPT2::GPT2(const ModelConfig& cfg, int max_batch, int max_seq)
    : cfg_(cfg),
      layout_(gpt2_layout(cfg)),
      max_batch_(max_batch),
      max_seq_(max_seq),
      acts_(gpt2_activation_floats(cfg, max_batch, max_seq)),
      views_(layout_, cfg.n_layer) {
    MESHLM_CHECK(max_seq <= cfg.max_seq_len, "sequence length ", max_seq, " exceeds max_seq_len ",
                 cfg.max_seq_len);
    const std::size_t N = static_cast<std::size_t>(max_batch) * max_seq, C = cfg.d_model,
                      F = cfg.mlp_width();
    Planner p{&acts_};
    embed_ = p.take(N * C);
    blocks_.resize(cfg.n_layer);
    for (auto& b : blocks_) {
        b.ln1 = p.take(N * C);
        b.ln1_mean = p.take(N);
        b.ln1_rstd = p.take(N);
        b.qkv = p.take(N * 3 * C);
        b.atty = p.take(N * C);
        b.lse = p.take(N * cfg.n_head);
        b.res_mid = p.take(N * C);
        b.ln2 = p.take(N * C);
        b.ln2_mean = p.take(N);
        b.ln2_rstd = p.take(N);
        b.fch = p.take(N * F);
        b.fch_gelu = p.take(N * F);
        b.res_out = p.take(N * C);
    }
    lnf_ = p.take(N * C);
    lnf_mean_ = p.take(N);
    lnf_rstd_ = p.take(N);
    logits_ = p.take(N * cfg.vocab_size);
    losses_ = p.take(N);
    dres_ = p.take(N * C);
    dln_ = p.take(N * C);
    datty_ = p.take(N * C);
    dqkv_ = p.take(N * 3 * C);
    dfch_ = p.take(N * F);
    dfch_gelu_ = p.take(N * F);
}

float GPT2::forward(const float* params, const std::int32_t* tokens, const std::int32_t* targets,
                    int B, int T, float grad_scale) {
    // The plan is by tokens: any (B, T) with B*T <= max_batch*max_seq and T <= max_seq fits
    // (sequence-length warmup trains more, shorter rows in the same memory).
    MESHLM_CHECK(B >= 1 && T >= 1 && T <= max_seq_ &&
                     static_cast<long>(B) * T <= static_cast<long>(max_batch_) * max_seq_,
                 "batch (", B, ", ", T, ") does not fit the planned (", max_batch_, ", ", max_seq_,
                 ")");
    const int N = B * T, C = cfg_.d_model, F = cfg_.mlp_width(), V = cfg_.vocab_size,
              H = cfg_.n_head;
    const float eps = cfg_.ln_eps;
    using Pass = ParamStream::Pass;
    views_.begin(params, nullptr, Pass::forward);
    const GPT2Weights& w = views_.w;

    k::embedding_forward(embed_, tokens, w.wte, w.wpe, N, T, C);
    const float* x = embed_;
    for (int l = 0; l < cfg_.n_layer; ++l) {
        views_.begin_block(l, Pass::forward);
        const BlockWeights& bw = w.blocks[l];
        BlockActs& a = blocks_[l];
        k::layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, x, bw.ln1_w, bw.ln1_b, N, C, eps);
        k::linear_forward(a.qkv, a.ln1, bw.qkv_w, bw.qkv_b, N, C, 3 * C);
        k::attention_forward(a.atty, a.lse, a.qkv, B, T, H, H, C / H, nullptr);
        k::linear_forward(a.res_mid, a.atty, bw.attn_proj_w, bw.attn_proj_b, N, C, C);
        k::residual_forward(a.res_mid, a.res_mid, x, static_cast<std::size_t>(N) * C);
        k::layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.res_mid, bw.ln2_w, bw.ln2_b, N, C,
                             eps);
        k::linear_forward(a.fch, a.ln2, bw.fc_w, bw.fc_b, N, C, F);
        k::activation_forward(k::Act::gelu_tanh, a.fch_gelu, a.fch,
                              static_cast<std::size_t>(N) * F);
        k::linear_forward(a.res_out, a.fch_gelu, bw.mlp_proj_w, bw.mlp_proj_b, N, F, C);
        k::residual_forward(a.res_out, a.res_out, a.res_mid, static_cast<std::size_t>(N) * C);
        views_.end_block(l, Pass::forward);
        x = a.res_out;
    }
    k::layernorm_forward(lnf_, lnf_mean_, lnf_rstd_, x, w.lnf_w, w.lnf_b, N, C, eps);
    k::linear_forward(logits_, lnf_, w.wte, nullptr, N, C, V);

    tokens_ = tokens;
    B_ = B;
    T_ = T;
    grad_ready_ = false;
    if (!targets) return 0.f;
    k::softmax_cross_entropy(logits_, losses_, targets, N, V, V, grad_scale);
    grad_ready_ = grad_scale != 0.f;
    double sum = 0;
    int valid = 0;
    for (int n = 0; n < N; ++n)
        if (targets[n] >= 0) sum += losses_[n], ++valid;
    return valid ? static_cast<float>(sum / valid) : 0.f;
}

void GPT2::backward(const float* params, float* grads) {
    MESHLM_CHECK(grad_ready_, "backward() needs a forward() with targets and grad_scale != 0");
    grad_ready_ = false;
    const int B = B_, T = T_, N = B * T, C = cfg_.d_model, F = cfg_.mlp_width(),
              V = cfg_.vocab_size, H = cfg_.n_head;
    const std::size_t NC = static_cast<std::size_t>(N) * C;
    using Pass = ParamStream::Pass;
    views_.begin(params, grads, Pass::backward);
    const GPT2Weights &w = views_.w, &g = views_.g;

    k::linear_backward(dln_, g.wte, nullptr, logits_, lnf_, w.wte, N, C, V);
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
                           bw.mlp_proj_w, N, F, C);
        k::activation_backward(k::Act::gelu_tanh, dfch_, a.fch, dfch_gelu_,
                               static_cast<std::size_t>(N) * F);
        k::linear_backward(dln_, bg.fc_w, bg.fc_b, dfch_, a.ln2, bw.fc_w, N, C, F);
        k::layernorm_backward(dres_, bg.ln2_w, bg.ln2_b, dln_, a.res_mid, bw.ln2_w, a.ln2_mean,
                              a.ln2_rstd, N, C);
        k::linear_backward(datty_, bg.attn_proj_w, bg.attn_proj_b, dres_, a.atty, bw.attn_proj_w, N,
                           C, C);
        k::attention_backward(dqkv_, datty_, a.atty, a.lse, a.qkv, B, T, H, H, C / H, nullptr);
        k::linear_backward(dln_, bg.qkv_w, bg.qkv_b, dqkv_, a.ln1, bw.qkv_w, N, C, 3 * C);
        k::layernorm_backward(dres_, bg.ln1_w, bg.ln1_b, dln_, x, bw.ln1_w, a.ln1_mean, a.ln1_rstd,
                              N, C);
        views_.end_block(l, Pass::backward);
        if (block_hook_) block_hook_(l);
    }
    k::embedding_backward(g.wte, g.wpe, dres_, tokens_, N, T, C);
    views_.embeddings_done();
}

}  // namespace meshlm

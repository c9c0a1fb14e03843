#include "meshlm/model/decode_stack.h"

#include <cstring>

#include "meshlm/core/error.h"
#include "meshlm/kernels/ops/activation.h"
#include "meshlm/kernels/ops/bf16.h"
#include "meshlm/kernels/ops/linear_decode.h"
#include "meshlm/kernels/ops/residual.h"
#include "meshlm/model/head.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm {

DecodeStack::DecodeStack(const ModelConfig& cfg, int max_rows, DecodePrecision precision)
    : cfg_(cfg),
      layout_(transformer_layout(cfg)),
      binder_(layout_),
      norm_(cfg),
      attn_(cfg, 1, 0),
      mlp_(cfg, 1),
      max_rows_(max_rows),
      precision_(precision) {
    MESHLM_CHECK(max_rows >= 1, "a decoder needs at least one row, got ", max_rows);
    const std::size_t R = max_rows, C = cfg.d_model, V = cfg.vocab_size;
    w_.blocks.resize(cfg.n_layer);
    logits_ = Buffer<float>(R * V);
    // A Transformer-VQ model decodes through the Transformer itself: only logits_ is used.
    if (cfg.vq()) return;
    x_ = Buffer<float>(R * C);
    ln_ = Buffer<float>(R * C);
    qkv_ = Buffer<float>(R * attn_.qkv_width());
    y_ = Buffer<float>(R * attn_.y_width());
    proj_ = Buffer<float>(R * C);
    h_ = Buffer<float>(R * mlp_.h_width());
    a_ = Buffer<float>(R * mlp_.Fl);
    mlp_out_ = Buffer<float>(R * C);
    mean_ = Buffer<float>(R);
    rstd_ = Buffer<float>(R);
    if (precision_ == DecodePrecision::bf16) params16_ = Buffer<std::uint16_t>(layout_.total());
    if (cfg.position == "t5_bias") {
        t5_ = std::make_unique<T5Bias>(cfg, attn_.Hl, cfg.t5_max_distance + 1);
        attn_.dist = &t5_->view();
    }
}

void DecodeStack::set_params(const float* params) {
    params_ = params;
    binder_.bind_all(const_cast<float*>(params), w_);
    if (t5_) t5_->expand(w_.t5_bias);
    if (precision_ == DecodePrecision::bf16)
        ops::to_bf16(flat(params16_.data(), layout_.total(), device_),
                     flat(params, layout_.total(), device_));
}

void DecodeStack::linear(float* y, const float* x, const float* W, const float* bias, int M, int I,
                         int O) {
    const Device d = device_;
    const Tensor w = precision_ == DecodePrecision::bf16
                         ? view(params16_.data() + (W - params_), {O, I}, d)
                         : view(W, {O, I}, d);
    ops::linear_decode(view(y, {M, O}, d), view(x, {M, I}, d), w,
                       bias ? view(bias, {O}, d) : Tensor{});
}

void DecodeStack::embed(int m, std::int32_t token, int pos) {
    const int C = cfg_.d_model;
    float* x = x_.data() + static_cast<std::size_t>(m) * C;
    std::memcpy(x, w_.wte + static_cast<std::size_t>(token) * C, C * sizeof(float));
    if (w_.wpe) {
        const float* p = w_.wpe + static_cast<std::size_t>(pos) * C;
        for (int c = 0; c < C; ++c) x[c] += p[c];
    }
}

void DecodeStack::move_row(int from, int to) {
    const std::size_t C = cfg_.d_model;
    if (from != to) std::memcpy(x_.data() + to * C, x_.data() + from * C, C * sizeof(float));
}

void DecodeStack::blocks(int M, const std::int32_t* pos, const Attend& attend) {
    MESHLM_CHECK(params_, "set_params() before decoding");
    MESHLM_CHECK(M >= 1 && M <= max_rows_, "a pass of ", M, " rows (at most ", max_rows_, ")");
    const int C = cfg_.d_model, W = attn_.qkv_width();
    const bool parallel = cfg_.block == "parallel";
    const Device d = device_;
    const Tensor x = view(x_.data(), {M, C}, d), proj = view(proj_.data(), {M, C}, d);
    const Tensor out = view(mlp_out_.data(), {M, C}, d);
    const Tensor h = view(h_.data(), {M, mlp_.h_width()}, d), a = view(a_.data(), {M, mlp_.Fl}, d);
    for (int l = 0; l < cfg_.n_layer; ++l) {
        const BlockTensors& b = w_.blocks[l];
        norm_.forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), b.ln1_w, b.ln1_b, M);
        linear(qkv_.data(), ln_.data(), b.qkv_w, b.qkv_b, M, C, W);
        attn_.rotate(qkv_.data(), pos, M, 1);
        attend(l, qkv_.data(), y_.data());
        linear(proj_.data(), y_.data(), b.proj_w, b.proj_b, M, attn_.y_width(), C);
        if (!parallel) {
            ops::residual_forward(x, x, proj);
            if (!cfg_.has_mlp()) continue;  // a block of attention only
            norm_.forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), b.ln2_w, b.ln2_b, M);
        }
        linear(h_.data(), ln_.data(), b.fc_w, b.fc_b, M, C, mlp_.h_width());
        if (mlp_.gated)
            ops::glu_forward(mlp_.act, a, h);
        else
            ops::activation_forward(mlp_.act, a, h);
        linear(mlp_out_.data(), a_.data(), b.out_w, b.out_b, M, mlp_.Fl, C);
        if (parallel) ops::residual_forward(out, proj, out);
        ops::residual_forward(x, x, out);
    }
}

float* DecodeStack::head(int n) {
    const int C = cfg_.d_model;
    norm_.forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), w_.lnf_w, w_.lnf_b, n);
    linear(logits_.data(), ln_.data(), w_.head_w, w_.head_b, n, C, cfg_.vocab_size);
    scale_logits(device_, logits_.data(), static_cast<std::size_t>(n) * cfg_.vocab_size,
                 cfg_.head_scale());
    return logits_.data();
}

}  // namespace meshlm

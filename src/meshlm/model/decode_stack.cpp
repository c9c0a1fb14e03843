#include "meshlm/model/decode_stack.h"

#include <cstring>

#include "meshlm/core/error.h"
#include "meshlm/kernels/device.h"
#include "meshlm/kernels/ops/activation.h"
#include "meshlm/kernels/ops/bf16.h"
#include "meshlm/kernels/ops/embedding.h"
#include "meshlm/kernels/ops/linear_decode.h"
#include "meshlm/kernels/ops/residual.h"
#include "meshlm/model/head.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm {

DecodeStack::DecodeStack(const ModelConfig& cfg, int max_rows, DecodePrecision precision,
                         Device device)
    : cfg_(for_inference(cfg)),
      layout_(transformer_layout(cfg)),
      binder_(layout_),
      norm_(cfg),
      attn_(cfg, 1, 0),
      mlp_(cfg, 1),
      max_rows_(max_rows),
      precision_(precision),
      device_(device),
      tokens_(device),
      pos_(device) {
    MESHLM_CHECK(max_rows >= 1, "a decoder needs at least one row, got ", max_rows);
    if (const std::string gap = decode_device_gap(cfg_, device); !gap.empty())
        throw InvalidInput(detail::concat("this model cannot decode on ",
                                          kernels::device_name(device), ": ", gap,
                                          "; decode it on the CPU"));
    attn_.place(device);
    norm_.device = mlp_.device = device;
    const std::size_t R = max_rows, C = cfg.d_model, V = cfg.vocab_size;
    w_.blocks.resize(cfg.n_layer);
    auto rows = [&](std::size_t width) { return kernels::FloatArray(device, R * width); };
    logits_ = rows(V);
    if (device != Device::cpu) host_logits_ = Buffer<float>(R * V);
    // A Transformer-VQ model decodes through the Transformer itself: only logits_ is used.
    if (cfg.vq()) return;
    x_ = rows(C), ln_ = rows(C), proj_ = rows(C), mlp_out_ = rows(C);
    qkv_ = rows(attn_.qkv_width());
    y_ = rows(attn_.y_width());
    h_ = rows(mlp_.h_width());
    a_ = rows(mlp_.Fl);
    mean_ = rows(1), rstd_ = rows(1);
    if (precision_ == DecodePrecision::bf16)
        params16_ = kernels::DeviceBuffer(device, DType::bf16,
                                          {static_cast<std::int64_t>(layout_.total())});
    if (cfg.position == "t5_bias") {
        t5_ = std::make_unique<T5Bias>(cfg, attn_.Hl, cfg.t5_max_distance + 1);
        attn_.dist = &t5_->view();
    }
}

void DecodeStack::set_params(const float* params) {
    params_ = params;
    if (device_ != Device::cpu) {  // the weights as they are now, in the device's memory
        const std::size_t n = layout_.total();
        if (dparams_.size() != n) dparams_ = kernels::FloatArray(device_, n);
        kernels::copy(flat(dparams_.data(), n, device_), flat(params, n, Device::cpu));
        params_ = params = dparams_.data();
    }
    binder_.bind_all(const_cast<float*>(params), w_);
    if (t5_) t5_->expand(w_.t5_bias);
    if (precision_ == DecodePrecision::bf16)
        ops::to_bf16(params16_.view(), flat(params, layout_.total(), device_));
}

void DecodeStack::linear(float* y, const float* x, const float* W, const float* bias, int M, int I,
                         int O) {
    const Device d = device_;
    const Tensor w =
        precision_ == DecodePrecision::bf16
            ? view(static_cast<const std::uint16_t*>(params16_.data()) + (W - params_), {O, I}, d)
            : view(W, {O, I}, d);
    ops::linear_decode(view(y, {M, O}, d), view(x, {M, I}, d), w,
                       bias ? view(bias, {O}, d) : Tensor{});
}

void DecodeStack::embed(int M, const std::int32_t* tokens, const std::int32_t* pos) {
    const int C = cfg_.d_model;
    const Device d = device_;
    ops::embedding_forward(view(x_.data(), {M, C}, d), view(tokens_.put(tokens, M), {M}, d),
                           view(w_.wte, {cfg_.vocab_size, C}, d), Tensor{}, 1);
    if (!w_.wpe) return;
    // Rows sit at their own positions: one position row each (T = 1).
    for (int m = 0; m < M; ++m)
        ops::position_embedding_forward(
            view(x_.data() + static_cast<std::size_t>(m) * C, {1, C}, d),
            view(w_.wpe + static_cast<std::size_t>(pos[m]) * C, {1, C}, d), 1);
}

void DecodeStack::move_row(int from, int to) {
    const std::size_t C = cfg_.d_model;
    const auto row = [&](int m) { return view(x_.data() + m * C, {1, cfg_.d_model}, device_); };
    if (from != to) kernels::copy(row(to), row(from));
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
    const std::int32_t* at = pos_.put(pos, M);  // the positions where rotate() reads them
    for (int l = 0; l < cfg_.n_layer; ++l) {
        const BlockTensors& b = w_.blocks[l];
        norm_.forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), b.ln1_w, b.ln1_b, M);
        linear(qkv_.data(), ln_.data(), b.qkv_w, b.qkv_b, M, C, W);
        attn_.rotate(qkv_.data(), at, M, 1);
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

float* DecodeStack::host_logits(int n) {
    if (device_ == Device::cpu) return logits_.data();
    const std::int64_t len = static_cast<std::int64_t>(n) * cfg_.vocab_size;
    kernels::copy(view(host_logits_.data(), {len}, Device::cpu),
                  view(logits_.data(), {len}, device_));
    return host_logits_.data();
}

}  // namespace meshlm

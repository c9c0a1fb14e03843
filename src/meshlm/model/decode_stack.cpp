#include "meshlm/model/decode_stack.h"

#include <cstring>

#include "meshlm/core/error.h"
#include "meshlm/kernels/device.h"
#include "meshlm/kernels/ops/bf16.h"
#include "meshlm/kernels/ops/embedding.h"
#include "meshlm/kernels/ops/linear_decode.h"
#include "meshlm/kernels/ops/residual.h"
#include "meshlm/model/head.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm {

namespace {

// The decode pass: the caller's attention over its cache, at the rows' positions; the linears
// add their biases (linear_decode fuses them) and a branch closes as residual + branch.
class DecodePass final : public BlockPass {
  public:
    DecodePass(const DecodeStack::Attend& attend, const std::int32_t* pos)
        : attend_(attend), pos_(pos) {}
    const std::int32_t* positions() const override { return pos_; }
    void attend(int layer, float* y, float*, const float* qkv, int, int) override {
        attend_(layer, qkv, y);
    }
    bool linear_biases() const override { return true; }
    // x + branch: the biases came with the linears. residual_forward keeps decode's few rows on
    // the calling thread (bias_residual would wake the others).
    void close(const Tensor& out, const Tensor& b1, const Tensor& b2, const Tensor& residual, int,
               int, int) override {
        MESHLM_CHECK(!b1.data && !b2.data, "a decode pass adds the biases in its linears");
        ops::residual_forward(out, out, residual);
    }

  private:
    const DecodeStack::Attend& attend_;
    const std::int32_t* pos_;
};

}  // namespace

DecodeStack::DecodeStack(const ModelConfig& cfg, int max_rows, DecodePrecision precision,
                         Device device)
    : cfg_(for_inference(cfg)),
      layout_(transformer_layout(cfg)),
      binder_(layout_),
      block_(cfg, 1, 0),
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
    block_.place(device);
    block_.attn.linear = block_.mlp.linear = &linear_;
    const std::size_t R = max_rows, C = cfg.d_model, V = cfg.vocab_size;
    w_.blocks.resize(cfg.n_layer);
    auto rows = [&](std::size_t width) { return kernels::FloatArray(device, R * width); };
    logits_ = rows(V);
    if (device != Device::cpu) host_logits_ = Buffer<float>(R * V);
    // A Transformer-VQ model decodes through the Transformer itself: only logits_ is used.
    if (cfg.vq()) return;
    const Attention& attn = block_.attn;
    x_[0] = rows(C), x_[1] = rows(C), ln_ = rows(C), mid_ = rows(C);
    qkv_ = rows(attn.qkv_width());
    y_ = rows(attn.y_width());
    h_ = rows(block_.mlp.h_width());
    a_ = rows(block_.mlp.Fl);
    mean_ = rows(1), rstd_ = rows(1);
    if (precision_ == DecodePrecision::bf16)
        params16_ = kernels::DeviceBuffer(device, DType::bf16,
                                          {static_cast<std::int64_t>(layout_.total())});
    if (cfg.position == "t5_bias") {
        t5_ = std::make_unique<T5Bias>(cfg, attn.Hl, cfg.t5_max_distance + 1, device);
        block_.attn.dist = &t5_->view();
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

void DecodeStack::Linear::forward(float* y, const float* x, const float* W, const float* b, int M,
                                  int I, int O, bool accumulate) const {
    if (!accumulate) return stack->linear(y, x, W, b, M, I, O);
    // A parallel block's second branch (in mid_, which only sequential blocks use otherwise):
    // computed apart, then y = y + branch.
    float* branch = stack->mid_.data();
    stack->linear(branch, x, W, b, M, I, O);
    const Tensor yv = view(y, {M, O}, stack->device_);
    ops::residual_forward(yv, yv, view(branch, yv.shape, stack->device_));
}

void DecodeStack::embed(int M, const std::int32_t* tokens, const std::int32_t* pos) {
    const int C = cfg_.d_model;
    const Device d = device_;
    cur_ = 0;
    ops::embedding_forward(view(x(), {M, C}, d), view(tokens_.put(tokens, M), {M}, d),
                           view(w_.wte, {cfg_.vocab_size, C}, d), Tensor{}, 1);
    if (!w_.wpe) return;
    // Rows sit at their own positions: one position row each (T = 1).
    for (int m = 0; m < M; ++m)
        ops::position_embedding_forward(
            view(x() + static_cast<std::size_t>(m) * C, {1, C}, d),
            view(w_.wpe + static_cast<std::size_t>(pos[m]) * C, {1, C}, d), 1);
}

void DecodeStack::move_row(int from, int to) {
    const std::size_t C = cfg_.d_model;
    const auto row = [&](int m) { return view(x() + m * C, {1, cfg_.d_model}, device_); };
    if (from != to) kernels::copy(row(to), row(from));
}

void DecodeStack::blocks(int M, const std::int32_t* pos, const Attend& attend) {
    MESHLM_CHECK(params_, "set_params() before decoding");
    MESHLM_CHECK(M >= 1 && M <= max_rows_, "a pass of ", M, " rows (at most ", max_rows_, ")");
    DecodePass pass(attend, pos_.put(pos, M));  // the positions where rotate() reads them
    BlockActs a{};
    a.ln1 = a.ln2 = ln_.data(), a.mean1 = a.mean2 = mean_.data();
    a.rstd1 = a.rstd2 = rstd_.data();
    a.qkv = qkv_.data(), a.y = y_.data(), a.mid = mid_.data(), a.h = h_.data(), a.a = a_.data();
    for (int l = 0; l < cfg_.n_layer; ++l) {
        a.out = x_[1 - cur_].data();
        block_.forward(pass, l, w_.blocks[l], a, x(), M, 1);
        cur_ = 1 - cur_;
    }
}

float* DecodeStack::head(int n) {
    const int C = cfg_.d_model;
    block_.norm.forward(ln_.data(), mean_.data(), rstd_.data(), x(), w_.lnf_w, w_.lnf_b, n);
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

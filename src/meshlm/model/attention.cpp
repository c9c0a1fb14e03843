#include "meshlm/model/attention.h"

#include "meshlm/kernels/ops/attention.h"
#include "meshlm/kernels/ops/attention_act.h"
#include "meshlm/kernels/ops/qk_norm.h"
#include "meshlm/kernels/ops/rope.h"
#include "meshlm/model/linear.h"
#include "meshlm/model/positions.h"

namespace meshlm {
namespace k = kernels;

namespace {

// RoPE (forward or backward) over the q heads, then the k heads, of qkv rows.
void rope_qk(const Attention& a, bool forward, float* qkv, const std::int32_t* pos, int N, int T) {
    const Tensor x = view(qkv, {N, a.qkv_width()}, a.device), p = view(pos, {N}, a.device);
    const Tensor f = a.inv_freq_view();
    ops::RopeHeads r{.heads = a.Hl,
                     .head_dim = a.D,
                     .rope_dim = a.rope_dim,
                     .interleaved = a.interleaved,
                     .T = T};
    const auto rope = forward ? ops::rope_forward : ops::rope_backward;
    rope(x, p, f, r);
    r.col0 = a.Hl * a.D, r.heads = a.Kl;
    rope(x, p, f, r);
}

// The core's views: qkv rows [B, T, qkv width], y [B, T, Hl D], lse [B, Hl, T].
struct CoreViews {
    Tensor qkv, y, lse, slopes;
    ops::AttentionHeads heads;
};

CoreViews core_views(const Attention& a, const float* qkv, const float* y, const float* lse, int B,
                     int T, const k::AttnDropout* drop) {
    const Device d = a.device;
    return {view(qkv, {B, T, a.qkv_width()}, d),
            view(y, {B, T, a.y_width()}, d),
            lse ? view(lse, {B, a.Hl, T}, d) : Tensor{},
            a.slopes_view(),
            {.H = a.Hl, .Hkv = a.Kl, .scale = a.scale, .dropout = drop, .dist = a.dist}};
}

}  // namespace

Attention::Attention(const ModelConfig& cfg, int model, int rank)
    : C(cfg.d_model),
      D(cfg.head_dim()),
      H(cfg.n_head),
      K(cfg.kv_heads()),
      Hl(cfg.n_head / model),
      Kl(cfg.kv_heads() / model),
      head0(rank * (cfg.n_head / model)),
      rope(cfg.position == "rope"),
      rope_dim(cfg.rotary_dims()),
      interleaved(cfg.rope_style == "interleaved"),
      scale(cfg.attention_scale()),
      qk_norm(cfg.qk_norm),
      norm_eps(cfg.norm_eps) {
    const std::string& a = cfg.attn_act;
    act.act = a == "sqrelu"        ? k::AttnAct::sqrelu
              : a == "elu"         ? k::AttnAct::elu
              : a == "norm_sqrelu" ? k::AttnAct::norm_sqrelu
              : a == "norm_elu"    ? k::AttnAct::norm_elu
                                   : k::AttnAct::softmax;
    act.t_norm = static_cast<float>(cfg.max_seq_len);  // the seed's sequence_len
    act.eps = cfg.norm_eps;
    if (rope) inv_freq = rope_inv_freq(cfg);
    if (cfg.position == "alibi") {
        const std::vector<float> all = alibi_slopes(cfg.n_head);
        slopes.assign(all.begin() + head0, all.begin() + head0 + Hl);
    }
}

void Attention::place(Device d) {
    device = d;
    if (d == Device::cpu) return;
    auto to_device = [d](const std::vector<float>& t) {
        const auto n = static_cast<std::int64_t>(t.size());
        kernels::DeviceBuffer b(d, DType::f32, {n});
        if (n) kernels::copy(b.view(), view(t.data(), {n}, Device::cpu));
        return b;
    };
    inv_freq_dev = to_device(inv_freq), slopes_dev = to_device(slopes);
}

Tensor Attention::inv_freq_view() const {
    const float* at =
        device == Device::cpu ? inv_freq.data() : static_cast<const float*>(inv_freq_dev.data());
    return view(at, {rope_dim / 2}, device);
}

Tensor Attention::slopes_view() const {
    if (slopes.empty()) return Tensor{};
    const float* at =
        device == Device::cpu ? slopes.data() : static_cast<const float*>(slopes_dev.data());
    return view(at, {Hl}, device);
}

void Attention::rotate(float* qkv, const std::int32_t* pos, int N, int T, float* qk_rstd) const {
    if (rope) rope_qk(*this, true, qkv, pos, N, T);
    // q heads then k heads are adjacent: one pass over Hl + Kl heads.
    if (!qk_norm) return;
    const ops::QkNormHeads h{.heads = Hl + Kl, .head_dim = D};
    ops::qk_norm_forward(view(qkv, {N, qkv_width()}, device),
                         qk_rstd ? view(qk_rstd, {N, Hl + Kl}, device) : Tensor{}, h, norm_eps);
}

void Attention::project_in(float* qkv, const float* x, const BlockTensors& w, int N, int T,
                           const std::uint16_t* x16, float* qk_rstd) const {
    project(qkv, x, w, N, x16);
    rotate(qkv, nullptr, N, T, qk_rstd);
}

void Attention::project(float* qkv, const float* x, const BlockTensors& w, int N,
                        const std::uint16_t* x16) const {
    linear::forward(linear, device, qkv, x, w.qkv_w, w.qkv_b, N, C, qkv_width(), false, bf16, x16);
}

void Attention::core(float* y, float* lse, const float* qkv, int B, int T,
                     const k::AttnDropout* drop) const {
    const CoreViews v = core_views(*this, qkv, y, lse, B, T, drop);
    if (act.act != k::AttnAct::softmax)
        return ops::attention_act_forward(v.y, v.qkv, v.slopes, v.heads, act);
    ops::attention_forward(v.y, v.lse, v.qkv, v.slopes, v.heads);
}

void Attention::project_out(float* out, const float* y, const BlockTensors& w, int N,
                            bool accumulate, bool bias) const {
    linear::forward(linear, device, out, y, w.proj_w, bias ? w.proj_b : nullptr, N, y_width(), C,
                    accumulate, bf16, nullptr);
}

void Attention::backward(float* dx, BlockTensors& g, float* dy, float* dqkv, const float* dout,
                         const float* x, const float* qkv, const float* y, const float* lse,
                         const BlockTensors& w, int B, int T, const k::AttnDropout* drop,
                         bool accumulate, const std::uint16_t* x16, const float* qk_rstd) const {
    const int N = B * T;
    linear::backward(device, dy, g.proj_w, nullptr, dout, y, w.proj_w, N, y_width(), C, false,
                     bf16);
    const CoreViews v = core_views(*this, qkv, y, lse, B, T, drop);
    const Tensor dq = view(dqkv, {B, T, qkv_width()}, device), dyv = view(dy, v.y.shape, device);
    if (act.act != k::AttnAct::softmax)
        ops::attention_act_backward(dq, dyv, v.qkv, v.slopes, v.heads, act);
    else
        ops::attention_backward(dq, dyv, v.y, v.lse, v.qkv, v.slopes, v.heads);
    // qkv holds the normalized q and k heads: the xhat of the norm's backward.
    if (qk_norm) {
        const Tensor rows = view(dqkv, {N, qkv_width()}, device);
        ops::qk_norm_backward(rows, view(qkv, rows.shape, device),
                              view(qk_rstd, {N, Hl + Kl}, device),
                              {.heads = Hl + Kl, .head_dim = D});
    }
    if (rope) rope_qk(*this, false, dqkv, nullptr, N, T);
    linear::backward(device, dx, g.qkv_w, g.qkv_b, dqkv, x, w.qkv_w, N, C, qkv_width(), accumulate,
                     bf16, x16);
}

}  // namespace meshlm

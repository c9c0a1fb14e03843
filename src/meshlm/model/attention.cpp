#include "meshlm/model/attention.h"

#include "meshlm/model/linear.h"
#include "meshlm/model/positions.h"

namespace meshlm {
namespace k = kernels;

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

void Attention::rotate(float* qkv, const std::int32_t* pos, int N, int T, float* qk_rstd) const {
    if (rope) {
        k::rope_forward(qkv, qkv_width(), pos, N, T, Hl, D, rope_dim, interleaved, inv_freq.data());
        k::rope_forward(qkv + Hl * D, qkv_width(), pos, N, T, Kl, D, rope_dim, interleaved,
                        inv_freq.data());
    }
    // q heads then k heads are adjacent: one pass over Hl + Kl heads.
    if (qk_norm) k::qk_norm_forward(qkv, qkv_width(), qk_rstd, N, Hl + Kl, D, norm_eps);
}

void Attention::forward(float* out, float* qkv, float* y, float* lse, const float* x,
                        const BlockTensors& w, int B, int T, const k::AttnDropout* drop,
                        bool accumulate) const {
    project_in(qkv, x, w, B * T, T);
    core(y, lse, qkv, B, T, drop);
    project_out(out, y, w, B * T, accumulate);
}

void Attention::project_in(float* qkv, const float* x, const BlockTensors& w, int N, int T,
                           const std::uint16_t* x16, float* qk_rstd) const {
    project(qkv, x, w, N, x16);
    rotate(qkv, nullptr, N, T, qk_rstd);
}

void Attention::project(float* qkv, const float* x, const BlockTensors& w, int N,
                        const std::uint16_t* x16) const {
    linear::forward(qkv, x, w.qkv_w, w.qkv_b, N, C, qkv_width(), false, bf16, x16);
}

void Attention::core(float* y, float* lse, const float* qkv, int B, int T,
                     const k::AttnDropout* drop) const {
    const float* sl = slopes.empty() ? nullptr : slopes.data();
    if (act.act != k::AttnAct::softmax)
        return k::attention_act_forward(y, qkv, B, T, Hl, Kl, D, sl, act, scale);
    k::attention_forward(y, lse, qkv, B, T, Hl, Kl, D, sl, drop, scale, dist);
}

void Attention::project_out(float* out, const float* y, const BlockTensors& w, int N,
                            bool accumulate) const {
    linear::forward(out, y, w.proj_w, nullptr, N, y_width(), C, accumulate, bf16);
}

void Attention::backward(float* dx, BlockTensors& g, float* dy, float* dqkv, const float* dout,
                         const float* x, const float* qkv, const float* y, const float* lse,
                         const BlockTensors& w, int B, int T, const k::AttnDropout* drop,
                         bool accumulate, const std::uint16_t* x16, const float* qk_rstd) const {
    const int N = B * T;
    linear::backward(dy, g.proj_w, nullptr, dout, y, w.proj_w, N, y_width(), C, false, bf16);
    if (act.act != k::AttnAct::softmax)
        k::attention_act_backward(dqkv, dy, qkv, B, T, Hl, Kl, D,
                                  slopes.empty() ? nullptr : slopes.data(), act, scale);
    else
        k::attention_backward(dqkv, dy, y, lse, qkv, B, T, Hl, Kl, D,
                              slopes.empty() ? nullptr : slopes.data(), drop, scale, dist);
    // qkv holds the normalized q and k heads: the xhat of the norm's backward.
    if (qk_norm) k::qk_norm_backward(dqkv, qkv_width(), qkv, qkv_width(), qk_rstd, N, Hl + Kl, D);
    if (rope) {
        k::rope_backward(dqkv, qkv_width(), nullptr, N, T, Hl, D, rope_dim, interleaved,
                         inv_freq.data());
        k::rope_backward(dqkv + Hl * D, qkv_width(), nullptr, N, T, Kl, D, rope_dim, interleaved,
                         inv_freq.data());
    }
    linear::backward(dx, g.qkv_w, g.qkv_b, dqkv, x, w.qkv_w, N, C, qkv_width(), accumulate, bf16,
                     x16);
}

}  // namespace meshlm

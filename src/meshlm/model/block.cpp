// The block's sequence (block.h), forward, recomputation and backward side by side. The layers
// hold the math; this file only orders them, so every pass runs the same steps in the same order
// (the training losses and weights are bitwise those of the order written here).
#include "meshlm/model/block.h"

#include <utility>

#include "meshlm/core/error.h"
#include "meshlm/kernels/ops/bf16.h"
#include "meshlm/kernels/ops/bias_backward.h"
#include "meshlm/kernels/ops/residual.h"
#include "meshlm/model/coord_stats.h"

namespace meshlm {
using namespace coord_site;

void BlockPass::close(const Tensor& out, const Tensor& b1, const Tensor& b2, const Tensor& residual,
                      int, int, int) {
    ops::bias_residual(out, b1, b2, residual);
}

const float* BlockPass::branch_grad(const float* dres, int, int, int) {
    return dres;
}

Block::Block(const ModelConfig& cfg, int model, int rank)
    : norm(cfg),
      attn(cfg, model, rank),
      mlp(cfg, model),
      vq(cfg, model),
      vq_on(cfg.vq()),
      parallel(cfg.block == "parallel"),
      has_mlp(cfg.has_mlp()),
      C(cfg.d_model) {}

void Block::place(Device d) {
    attn.place(d);
    norm.device = mlp.device = d;
    vq.place(d);
}

void Block::normalize(float* ln, std::uint16_t* ln16, float* mean, float* rstd, const float* x,
                      const float* gain, const float* bias, int N) const {
    norm.forward(ln, mean, rstd, x, gain, bias, N);
    const std::int64_t n = static_cast<std::int64_t>(N) * C;
    if (ln16) ops::to_bf16(view(ln16, {n}, device()), view(ln, {n}, device()));
}

void Block::close(BlockPass& pass, float* out, const float* b1, const float* b2,
                  const float* residual, int N, int layer, int site, int stat) const {
    const Device d = device();
    auto bias = [&](const float* b) { return b ? view(b, {C}, d) : Tensor{}; };
    if (!b1) std::swap(b1, b2);  // either bias may be absent
    pass.close(view(out, {N, C}, d), bias(b1), bias(b2), view(residual, {N, C}, d), layer, site,
               stat);
}

void Block::bias_grad(float* db, const float* dy, int N) const {
    if (db) ops::bias_backward(view(db, {C}, device()), view(dy, {N, C}, device()));
}

void Block::attention(BlockPass& pass, int l, const BlockTensors& w, BlockActs& a, float* branch,
                      int B, int T) {
    const int N = B * T;
    if (vq_on) {
        vq.derive(vq_derived, w);
        const float err = vq.forward(branch, a.vq, vq_derived, vq_scratch, a.ln1, a.ln1_16, w, B, T,
                                     false, pass.vq_states(l));
        return pass.vq_quantized(a.vq, err, N);
    }
    // The stages one by one, so the coordinate check sees q, k, v before and after rotary.
    const int Q = attn.Hl * attn.D, KV = attn.Kl * attn.D, W = attn.qkv_width();
    attn.project(a.qkv, a.ln1, w, N, a.ln1_16);
    pass.record(l, aq, a.qkv, N, Q, W), pass.record(l, ak, a.qkv + Q, N, KV, W);
    pass.record(l, av, a.qkv + Q + KV, N, KV, W);
    attn.rotate(a.qkv, pass.positions(), N, T, a.qk_rstd);
    if (attn.rope) pass.record(l, aqr, a.qkv, N, Q, W), pass.record(l, akr, a.qkv + Q, N, KV, W);
    pass.attend(l, a.y, a.lse, a.qkv, B, T);
    pass.record(l, ao, a.y, N, Q, Q);
    attn.project_out(branch, a.y, w, N, false, pass.linear_biases());
}

void Block::forward(BlockPass& pass, int l, const BlockTensors& w, BlockActs& a, const float* x,
                    int B, int T) {
    const int N = B * T;
    const bool fused = pass.linear_biases();  // the out-projections added their biases
    normalize(a.ln1, a.ln1_16, a.mean1, a.rstd1, x, w.ln1_w, w.ln1_b, N);
    pass.record(l, ax, a.ln1, N, C, C);
    if (parallel) {
        attention(pass, l, w, a, a.out, B, T);
        pass.record(l, fx, a.ln1, N, C, C);
        mlp.up(a.h, a.a, a.ln1, w, N, a.ln1_16, a.a16);
        pass.record(l, fh, a.h, N, mlp.h_width(), mlp.h_width());
        pass.record(l, fa, a.a, N, mlp.Fl, mlp.Fl);
        mlp.down(a.out, a.a, w, N, true, a.a16, fused);
        close(pass, a.out, fused ? nullptr : w.proj_b, fused ? nullptr : w.out_b, x, N, l,
              kDropAttnResid, fr);
        return;
    }
    float* branch = has_mlp ? a.mid : a.out;
    attention(pass, l, w, a, branch, B, T);
    close(pass, branch, fused ? nullptr : w.proj_b, nullptr, x, N, l, kDropAttnResid, ar);
    if (has_mlp) mlp_branch(pass, l, w, a, N);
}

void Block::mlp_branch(BlockPass& pass, int l, const BlockTensors& w, BlockActs& a, int N) {
    const bool fused = pass.linear_biases();
    normalize(a.ln2, a.ln2_16, a.mean2, a.rstd2, a.mid, w.ln2_w, w.ln2_b, N);
    pass.record(l, fx, a.ln2, N, C, C);
    mlp.up(a.h, a.a, a.ln2, w, N, a.ln2_16, a.a16);
    pass.record(l, fh, a.h, N, mlp.h_width(), mlp.h_width());
    pass.record(l, fa, a.a, N, mlp.Fl, mlp.Fl);
    mlp.down(a.out, a.a, w, N, false, a.a16, fused);
    close(pass, a.out, fused ? nullptr : w.out_b, nullptr, a.mid, N, l, kDropMlpResid, fr);
}

void Block::recompute(BlockPass& pass, int l, const BlockTensors& w, BlockActs& a, const float* x,
                      int B, int T, bool core) {
    const int N = B * T;
    normalize(a.ln1, a.ln1_16, a.mean1, a.rstd1, x, w.ln1_w, w.ln1_b, N);
    if (vq_on) {
        // Without `core` the forward kept the core's output (o, lse): only the projections and
        // codes rerun; with it, from the states the forward started from (pass.vq_states).
        vq.derive(vq_derived, w);
        vq.project_in(a.vq, vq_derived, a.ln1, a.ln1_16, w, N);
        if (core) vq.core(a.vq, vq_derived, B, T, pass.vq_states(l));
        if (!has_mlp) return;
        vq.project_out(a.mid, a.vq, vq_scratch, w, N, false);
    } else {
        attn.project_in(a.qkv, a.ln1, w, N, T, a.ln1_16, a.qk_rstd);
        if (core) pass.attend(l, a.y, a.lse, a.qkv, B, T);
        if (parallel) return mlp.up(a.h, a.a, a.ln1, w, N, a.ln1_16, a.a16);
        if (!has_mlp) return;  // a block of attention only
        attn.project_out(a.mid, a.y, w, N, false);
    }
    // The MLP's input is norm2 of the residual after attention, so that branch is rerun whole.
    close(pass, a.mid, w.proj_b, nullptr, x, N, l, kDropAttnResid, -1);
    normalize(a.ln2, a.ln2_16, a.mean2, a.rstd2, a.mid, w.ln2_w, w.ln2_b, N);
    mlp.up(a.h, a.a, a.ln2, w, N, a.ln2_16, a.a16);
}

void Block::backward(BlockPass& pass, int l, const BlockTensors& w, BlockTensors& g,
                     const BlockActs& a, const BlockGrads& s, const float* x, int B, int T) {
    const int N = B * T;
    const std::size_t NC = static_cast<std::size_t>(N) * C;
    const kernels::AttnDropout* drop = pass.attn_dropout(l);
    if (parallel) {
        const float* gb = pass.branch_grad(s.dres, N, l, kDropAttnResid);
        bias_grad(g.proj_b, gb, N);
        bias_grad(g.out_b, gb, N);
        mlp.backward(s.dln, g, s.da, s.dh, gb, a.ln1, a.h, a.a, w, N, false, a.ln1_16, a.a16);
        attn.backward(s.dln, g, s.dy, s.dqkv, gb, a.ln1, a.qkv, a.y, a.lse, w, B, T, drop, true,
                      a.ln1_16, a.qk_rstd);
        pass.reduce(s.dln, NC);
        norm.backward(s.dres, g.ln1_w, g.ln1_b, s.dln, x, w.ln1_w, a.mean1, a.rstd1, N);
        return;
    }
    if (has_mlp) {
        const float* gm = pass.branch_grad(s.dres, N, l, kDropMlpResid);
        bias_grad(g.out_b, gm, N);
        mlp.backward(s.dln, g, s.da, s.dh, gm, a.ln2, a.h, a.a, w, N, false, a.ln2_16, a.a16);
        pass.reduce(s.dln, NC);
        norm.backward(s.dres, g.ln2_w, g.ln2_b, s.dln, a.mid, w.ln2_w, a.mean2, a.rstd2, N);
    }
    const float* ga = pass.branch_grad(s.dres, N, l, kDropAttnResid);
    bias_grad(g.proj_b, ga, N);
    if (vq_on) {
        vq.derive(vq_derived, w);
        vq.backward(s.dln, g, ga, a.vq, vq_derived, vq_scratch, a.ln1, a.ln1_16, w, B, T,
                    pass.loss_scale(), false, pass.model_comm(), pass.vq_start(l));
    } else {
        attn.backward(s.dln, g, s.dy, s.dqkv, ga, a.ln1, a.qkv, a.y, a.lse, w, B, T, drop, false,
                      a.ln1_16, a.qk_rstd);
    }
    pass.reduce(s.dln, NC);
    norm.backward(s.dres, g.ln1_w, g.ln1_b, s.dln, x, w.ln1_w, a.mean1, a.rstd1, N);
}

}  // namespace meshlm

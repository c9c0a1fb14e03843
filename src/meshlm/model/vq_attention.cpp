#include "meshlm/model/vq_attention.h"

#include <algorithm>
#include <cmath>

#include "meshlm/kernels/device_buffer.h"
#include "meshlm/kernels/ops/activation.h"
#include "meshlm/kernels/ops/clip.h"
#include "meshlm/kernels/ops/elementwise.h"
#include "meshlm/kernels/ops/gemm.h"
#include "meshlm/kernels/ops/qk_norm.h"
#include "meshlm/kernels/ops/stats.h"
#include "meshlm/model/positions.h"

namespace meshlm {
namespace k = kernels;

namespace {
std::size_t pad16(std::size_t n) {
    return (n + 15) / 16 * 16;
}
}  // namespace

VqAttention::VqAttention(const ModelConfig& cfg, int model)
    : C(cfg.d_model),
      dk(cfg.vq_d_k),
      dv(cfg.vq_value_width() / model),
      S(cfg.vq_codes),
      L(cfg.vq_block_len),
      reduction(cfg.vq_reduction == "matmul" ? kernels::VqReduction::matmul
                                             : kernels::VqReduction::serial),
      eps(cfg.norm_eps),
      scale(static_cast<float>(std::pow(static_cast<double>(cfg.vq_d_k), -0.25))),
      c_beta(cfg.vq_c_beta) {
    if (cfg.vq()) table = xl_sinusoids(C, L, cfg.vq_pe_lam);
}

std::size_t VqAttention::core_floats(std::size_t N) const {
    return pad16(N * dv) + pad16(N);
}

std::size_t VqAttention::rest_floats(std::size_t N) const {
    return pad16(N * 2 * dk) + pad16(N * 2) + 2 * pad16(N * 2 * dv) + 2 * pad16(N);
}

VqAttention::Acts VqAttention::acts_at(float* base, std::size_t N) const {
    return acts_at(base, base + core_floats(N), N);
}

VqAttention::Acts VqAttention::acts_at(float* core, float* rest, std::size_t N) const {
    Acts a;
    a.o = core;
    a.lse = core + pad16(N * dv);
    auto take = [&](std::size_t n) {
        float* r = rest;
        rest += pad16(n);
        return r;
    };
    a.qk = take(N * 2 * dk);
    a.rstd = take(N * 2);
    a.vg = take(N * 2 * dv);
    a.act = take(N * 2 * dv);
    a.err = take(N);
    a.z = reinterpret_cast<std::int32_t*>(take(N));
    return a;
}

std::size_t VqAttention::derived_floats() const {
    return pad16(static_cast<std::size_t>(S) * dk) + pad16(static_cast<std::size_t>(L + 1) * dk) +
           2 * pad16(dk);
}

VqAttention::Derived VqAttention::derived_at(float* p) const {
    Derived d;
    d.codebook = p;
    d.rel = d.codebook + pad16(static_cast<std::size_t>(S) * dk);
    d.u = d.rel + pad16(static_cast<std::size_t>(L + 1) * dk);
    d.vb = d.u + pad16(dk);
    return d;
}

// Backward: dO | dog (N, dv each), dact (N, 2 dv), dqk, xhat (N, 2 dk), drel ((L + 1) dk),
// du | dvb (dk each). The forward uses the first N dv floats for o * g.
std::size_t VqAttention::scratch_floats(std::size_t N) const {
    return 2 * pad16(N * dv) + pad16(N * 2 * dv) + 2 * pad16(N * 2 * dk) +
           pad16(static_cast<std::size_t>(L + 1) * dk) + 2 * pad16(dk);
}

// Views of the layer's rows: q | k [N, 2 dk] and value | gate [N, 2 dv] and their halves.
namespace {
struct Halves {
    Tensor all, first, second;
};
Halves halves(const float* p, int N, int w, Device d) {
    const Tensor t = view(p, {N, 2 * w}, d);
    return {t, t.columns(0, w), t.columns(w, w)};
}
}  // namespace

void VqAttention::place(Device d) {
    device = d;
    if (d == Device::cpu || table.empty()) return;
    table_dev = kernels::DeviceBuffer(d, DType::f32, {L + 1, C});
    kernels::copy(table_dev.view(), view(table.data(), {L + 1, C}, Device::cpu));
}

Tensor VqAttention::table_view() const {
    return device == Device::cpu ? view(table.data(), {L + 1, C}, device) : table_dev.view();
}

ops::VqTables VqAttention::tables(const Derived& d) const {
    return {view(d.codebook, {S, dk}, device), view(d.rel, {L + 1, dk}, device),
            view(d.u, {dk}, device), view(d.vb, {dk}, device)};
}

void VqAttention::derive(Derived& d, const BlockTensors& w) const {
    const Device dev = device;
    ops::vq_codebook(view(d.codebook, {S, dk}, dev), view(w.c_sum, {S, dk}, dev),
                     view(w.c_count, {S}, dev));
    ops::gemm(view(d.rel, {L + 1, dk}, dev), table_view(), false, view(w.vq_r_w, {dk, C}, dev),
              true, scale, 0.f);
    const Tensor u = view(d.u, {dk}, dev), vb = view(d.vb, {dk}, dev);
    kernels::copy(u, view(w.vq_u, {dk}, dev));
    kernels::copy(vb, view(w.vq_v, {dk}, dev));
    ops::scale(u, scale);
    ops::scale(vb, scale);
}

float VqAttention::forward(float* out, const Acts& a, const Derived& d, float* scratch,
                           const float* x, const std::uint16_t* x16, const BlockTensors& w, int B,
                           int T, bool accumulate, k::VqAttnState* state) const {
    const float err = project_in(a, d, x, x16, w, B * T);
    core(a, d, B, T, state);
    project_out(out, a, scratch, w, B * T, accumulate);
    return err;
}

float VqAttention::project_in(const Acts& a, const Derived& d, const float* x,
                              const std::uint16_t* x16, const BlockTensors& w, int N) const {
    const Device dev = device;
    linear::forward(dev, a.qk, x, w.vq_qk_w, nullptr, N, C, 2 * dk, false, bf16, x16);
    linear::forward(dev, a.vg, x, w.vq_vg_w, nullptr, N, C, 2 * dv, false, bf16, x16);
    const Halves qk = halves(a.qk, N, dk, dev);
    ops::qk_norm_forward(qk.all, view(a.rstd, {N, 2}, dev), {.col0 = 0, .heads = 2, .head_dim = dk},
                         eps);
    ops::scale(flat(a.qk, static_cast<std::size_t>(N) * 2 * dk, dev), scale);
    const std::size_t nv = static_cast<std::size_t>(N) * 2 * dv;
    ops::activation_forward(k::Act::silu, flat(a.act, nv, dev), flat(a.vg, nv, dev));
    const Tensor err = view(a.err, {N}, dev);
    ops::vq_quantize(view(a.z, {N}, dev), err, qk.second, view(d.codebook, {S, dk}, dev));
    return static_cast<float>(ops::sum(err) / static_cast<double>(N));
}

void VqAttention::core(const Acts& a, const Derived& d, int B, int T, k::VqAttnState* state) const {
    const int N = B * T;
    const Device dev = device;
    ops::vq_attention_forward(view(a.o, {N, dv}, dev), view(a.lse, {N}, dev),
                              halves(a.qk, N, dk, dev).first, view(a.z, {N}, dev),
                              halves(a.act, N, dv, dev).first, tables(d), B, T, shape(), state);
}

void VqAttention::project_out(float* out, const Acts& a, float* scratch, const BlockTensors& w,
                              int N, bool accumulate) const {
    float* og = scratch;
    const Device dev = device;
    ops::mul(view(og, {N, dv}, dev), view(a.o, {N, dv}, dev), halves(a.act, N, dv, dev).second);
    linear::forward(dev, out, og, w.proj_w, nullptr, N, dv, C, accumulate, bf16);
}

void VqAttention::backward(float* dx, BlockTensors& g, const float* dout, const Acts& a,
                           const Derived& d, float* scratch, const float* x,
                           const std::uint16_t* x16, const BlockTensors& w, int B, int T,
                           float loss_scale, bool accumulate, ModelComm* mp,
                           const k::VqAttnState* state) const {
    const int N = B * T;
    const std::size_t NN = static_cast<std::size_t>(N);
    const Device dev = device;
    float* dO = scratch;
    float* dog = dO + pad16(NN * dv);
    float* dact = dog + pad16(NN * dv);
    float* dqk = dact + pad16(NN * 2 * dv);
    float* xhat = dqk + pad16(NN * 2 * dk);
    float* drel = xhat + pad16(NN * 2 * dk);
    float* du = drel + pad16(static_cast<std::size_t>(L + 1) * dk);
    float* dvb = du + pad16(dk);
    const Tensor o = view(a.o, {N, dv}, dev), dOv = view(dO, {N, dv}, dev);
    const Tensor dogv = view(dog, {N, dv}, dev);
    const Halves act = halves(a.act, N, dv, dev), dactv = halves(dact, N, dv, dev);
    const Halves qk = halves(a.qk, N, dk, dev), dqkv = halves(dqk, N, dk, dev);
    const Tensor duv = view(du, {dk}, dev), dvbv = view(dvb, {dk}, dev);
    const Tensor drelv = view(drel, {L + 1, dk}, dev), z = view(a.z, {N}, dev);

    // out = og Wo^T: dog = dout Wo, dWo += dout^T og (og rebuilt in dO's space first).
    ops::mul(dOv, o, act.second);
    linear::backward(dev, dog, g.proj_w, nullptr, dout, dO, w.proj_w, N, dv, C, false, bf16);
    ops::mul(dOv, dogv, act.second);  // d o = dog * g
    ops::mul(dactv.second, dogv, o);  // d g = dog * o
    ops::fill(duv, 0.f);
    ops::fill(dvbv, 0.f);
    ops::fill(drelv, 0.f);
    ops::vq_attention_backward({.dq = dqkv.first,
                                .dk = dqkv.second,
                                .dv = dactv.first,
                                .du = duv,
                                .dvb = dvbv,
                                .drel = drelv},
                               dOv, o, view(a.lse, {N}, dev), qk.first, z, act.first, tables(d), B,
                               T, shape(), state);
    const bool lead = !mp || mp->rank() == 0;
    if (mp && mp->size() > 1) {
        // Each rank's value columns gave a part of the score gradients: sum what they reach.
        mp->sum(dqk, NN * 2 * dk);
        mp->sum(drel, static_cast<std::size_t>(L + 1) * dk);
        mp->sum(du, dk);
        mp->sum(dvb, dk);
    }
    // Commitment: d/dk of c_beta |k - c_z|^2 per token, at the loss's per-token scale.
    const Tensor codebook = view(d.codebook, {S, dk}, dev);
    ops::vq_commit_grad(dqkv.second, qk.second, codebook, z, 2.f * c_beta * loss_scale);
    // Through the silu and the scaled RMSNorm (xhat = qk / scale, dxhat = scale dqk).
    const std::size_t nv = NN * 2 * dv, nk = NN * 2 * dk;
    ops::activation_backward(k::Act::silu, flat(dact, nv, dev), flat(a.vg, nv, dev),
                             flat(dact, nv, dev));
    const Tensor xhatv = flat(xhat, nk, dev);
    kernels::copy(xhatv, flat(a.qk, nk, dev));
    ops::scale(xhatv, 1.f / scale);
    ops::scale(flat(dqk, nk, dev), scale);
    ops::qk_norm_backward(dqkv.all, view(xhat, {N, 2 * dk}, dev), view(a.rstd, {N, 2}, dev),
                          {.col0 = 0, .heads = 2, .head_dim = dk});
    // The replicated q | k path's input gradient is added once, by rank 0, into the sum.
    linear::backward(dev, dx, g.vq_vg_w, nullptr, dact, x, w.vq_vg_w, N, C, 2 * dv, accumulate,
                     bf16, x16);
    linear::backward(dev, lead ? dx : nullptr, g.vq_qk_w, nullptr, dqk, x, w.vq_qk_w, N, C, 2 * dk,
                     true, bf16, x16);
    // rel = scale table Wr^T: dWr += scale drel^T table.
    ops::gemm(view(g.vq_r_w, {dk, C}, dev), drelv, true, table_view(), false, scale, 1.f);
    ops::axpy(view(g.vq_u, {dk}, dev), duv, scale);
    ops::axpy(view(g.vq_v, {dk}, dev), dvbv, scale);
    // The codebook's statistics of this batch (in row order: deterministic).
    ops::vq_codebook_stats(view(g.c_sum, {S, dk}, dev), view(g.c_count, {S}, dev), qk.second, z);
}

}  // namespace meshlm

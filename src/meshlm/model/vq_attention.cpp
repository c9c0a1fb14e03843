#include "meshlm/model/vq_attention.h"

#include <algorithm>
#include <cmath>

#include "meshlm/kernels/kernels.h"
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

void VqAttention::derive(Derived& d, const BlockTensors& w) const {
    for (int s = 0; s < S; ++s) {
        const float inv = 1.f / std::max(w.c_count[s], 0.01f);
        for (int j = 0; j < dk; ++j)
            d.codebook[static_cast<std::size_t>(s) * dk + j] =
                w.c_sum[static_cast<std::size_t>(s) * dk + j] * inv;
    }
    k::gemm(false, true, L + 1, dk, C, scale, table.data(), C, w.vq_r_w, C, 0.f, d.rel, dk);
    for (int j = 0; j < dk; ++j) d.u[j] = scale * w.vq_u[j], d.vb[j] = scale * w.vq_v[j];
}

namespace {
// og[n, c] = o[n, c] * g[n, c], g the second half of act's rows.
void gate(float* og, const float* o, const float* act, std::size_t N, int dv) {
#pragma omp parallel for schedule(static)
    for (std::size_t n = 0; n < N; ++n) {
        const float* on = o + n * dv;
        const float* gn = act + n * 2 * dv + dv;
        float* y = og + n * dv;
        for (int c = 0; c < dv; ++c) y[c] = on[c] * gn[c];
    }
}
}  // namespace

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
    const std::size_t NN = static_cast<std::size_t>(N);
    linear::forward(device, a.qk, x, w.vq_qk_w, nullptr, N, C, 2 * dk, false, bf16, x16);
    linear::forward(device, a.vg, x, w.vq_vg_w, nullptr, N, C, 2 * dv, false, bf16, x16);
    k::qk_norm_forward(a.qk, 2 * dk, a.rstd, N, 2, dk, eps);
    k::scale(a.qk, scale, NN * 2 * dk);
    k::activation_forward(k::Act::silu, a.act, a.vg, NN * 2 * dv);
    k::vq_quantize(a.z, a.err, a.qk + dk, 2 * dk, d.codebook, N, S, dk);
    double e = 0;
    for (std::size_t n = 0; n < NN; ++n) e += a.err[n];
    return static_cast<float>(e / static_cast<double>(N));
}

void VqAttention::core(const Acts& a, const Derived& d, int B, int T, k::VqAttnState* state) const {
    k::vq_attention_forward(a.o, a.lse, a.qk, 2 * dk, a.z, a.act, 2 * dv, d.codebook, d.rel, d.u,
                            d.vb, B, T, shape(), state);
}

void VqAttention::project_out(float* out, const Acts& a, float* scratch, const BlockTensors& w,
                              int N, bool accumulate) const {
    float* og = scratch;
    gate(og, a.o, a.act, static_cast<std::size_t>(N), dv);
    linear::forward(device, out, og, w.proj_w, nullptr, N, dv, C, accumulate, bf16);
}

void VqAttention::backward(float* dx, BlockTensors& g, const float* dout, const Acts& a,
                           const Derived& d, float* scratch, const float* x,
                           const std::uint16_t* x16, const BlockTensors& w, int B, int T,
                           float loss_scale, bool accumulate, ModelComm* mp,
                           const k::VqAttnState* state) const {
    const int N = B * T;
    const std::size_t NN = static_cast<std::size_t>(N);
    float* dO = scratch;
    float* dog = dO + pad16(NN * dv);
    float* dact = dog + pad16(NN * dv);
    float* dqk = dact + pad16(NN * 2 * dv);
    float* xhat = dqk + pad16(NN * 2 * dk);
    float* drel = xhat + pad16(NN * 2 * dk);
    float* du = drel + pad16(static_cast<std::size_t>(L + 1) * dk);
    float* dvb = du + pad16(dk);

    // out = og Wo^T: dog = dout Wo, dWo += dout^T og (og rebuilt in dO's space first).
    gate(dO, a.o, a.act, NN, dv);
    linear::backward(device, dog, g.proj_w, nullptr, dout, dO, w.proj_w, N, dv, C, false, bf16);
#pragma omp parallel for schedule(static)
    for (std::size_t n = 0; n < NN; ++n)
        for (int c = 0; c < dv; ++c) {
            const std::size_t i = n * dv + c;
            dO[i] = dog[i] * a.act[n * 2 * dv + dv + c];  // d o = dog * g
            dact[n * 2 * dv + dv + c] = dog[i] * a.o[i];  // d g = dog * o
        }
    std::fill_n(du, dk, 0.f);
    std::fill_n(dvb, dk, 0.f);
    std::fill_n(drel, static_cast<std::size_t>(L + 1) * dk, 0.f);
    k::vq_attention_backward(dqk, dqk + dk, dact, du, dvb, drel, dO, a.o, a.lse, a.qk, 2 * dk, a.z,
                             a.act, 2 * dv, d.codebook, d.rel, d.u, d.vb, B, T, shape(), state);
    const bool lead = !mp || mp->rank() == 0;
    if (mp && mp->size() > 1) {
        // Each rank's value columns gave a part of the score gradients: sum what they reach.
        mp->sum(dqk, NN * 2 * dk);
        mp->sum(drel, static_cast<std::size_t>(L + 1) * dk);
        mp->sum(du, dk);
        mp->sum(dvb, dk);
    }
    // Commitment: d/dk of c_beta |k - c_z|^2 per token, at the loss's per-token scale.
    const float cs = 2.f * c_beta * loss_scale;
#pragma omp parallel for schedule(static)
    for (std::size_t n = 0; n < NN; ++n) {
        float* gk = dqk + n * 2 * dk + dk;
        const float* kn = a.qk + n * 2 * dk + dk;
        const float* c = d.codebook + static_cast<std::size_t>(a.z[n]) * dk;
        for (int j = 0; j < dk; ++j) gk[j] += cs * (kn[j] - c[j]);
    }
    // Through the silu and the scaled RMSNorm (xhat = qk / scale, dxhat = scale dqk).
    k::activation_backward(k::Act::silu, dact, a.vg, dact, NN * 2 * dv);
    const float inv = 1.f / scale;
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < NN * 2 * dk; ++i) xhat[i] = a.qk[i] * inv, dqk[i] *= scale;
    k::qk_norm_backward(dqk, 2 * dk, xhat, 2 * dk, a.rstd, N, 2, dk);
    // The replicated q | k path's input gradient is added once, by rank 0, into the sum.
    linear::backward(device, dx, g.vq_vg_w, nullptr, dact, x, w.vq_vg_w, N, C, 2 * dv, accumulate,
                     bf16, x16);
    linear::backward(device, lead ? dx : nullptr, g.vq_qk_w, nullptr, dqk, x, w.vq_qk_w, N, C,
                     2 * dk, true, bf16, x16);
    // rel = scale table Wr^T: dWr += scale drel^T table.
    k::gemm(true, false, dk, C, L + 1, scale, drel, dk, table.data(), C, 1.f, g.vq_r_w, C);
    for (int j = 0; j < dk; ++j) g.vq_u[j] += scale * du[j], g.vq_v[j] += scale * dvb[j];
    // The codebook's statistics of this batch (in row order: deterministic).
    for (std::size_t n = 0; n < NN; ++n) {
        const int s = a.z[n];
        const float* kn = a.qk + n * 2 * dk + dk;
        float* cs_row = g.c_sum + static_cast<std::size_t>(s) * dk;
        for (int j = 0; j < dk; ++j) cs_row[j] += kn[j];
        g.c_count[s] += 1.f;
    }
}

}  // namespace meshlm

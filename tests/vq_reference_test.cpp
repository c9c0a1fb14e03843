// The whole Transformer-VQ sublayer (input RMSNorm, projections, quantization with the
// straight-through estimator, linear-time attention with XL biases, gate, output projection,
// commitment loss) against PyTorch autograd of the quadratic reference in
// tools/reference/vq_reference.py (fixtures tests/fixtures/vq/): outputs, codes, the commitment
// loss, the gradient of every input and weight, and the codebook statistics backward collects.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "meshlm/core/threads.h"
#include "meshlm/io/safetensors.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/model/norm.h"
#include "meshlm/model/vq_attention.h"
#include "test_util.h"

namespace meshlm {
namespace {

class VqReference : public ::testing::TestWithParam<std::string> {};

TEST_P(VqReference, SublayerAndGradientsMatchPyTorch) {
    set_thread_count(2);
    SafetensorsFile file(test::fixture("vq/" + GetParam() + ".safetensors"));
    const auto& md = file.metadata();
    auto num = [&](const char* k) { return std::stod(md.at(k)); };
    ModelConfig cfg;
    cfg.d_model = static_cast<int>(num("C"));
    cfg.attention = "vq", cfg.norm = "rmsnorm", cfg.norm_bias = false;
    cfg.norm_eps = static_cast<float>(num("eps"));
    cfg.vq_d_k = static_cast<int>(num("dk")), cfg.vq_d_v = static_cast<int>(num("dv"));
    cfg.vq_codes = static_cast<int>(num("S")), cfg.vq_block_len = static_cast<int>(num("L"));
    cfg.vq_c_beta = static_cast<float>(num("c_beta"));
    cfg.vq_pe_lam = static_cast<float>(num("lam"));
    const int B = static_cast<int>(num("B")), T = static_cast<int>(num("T")), N = B * T;
    const int C = cfg.d_model;

    const VqAttention layer(cfg);
    const Norm norm(cfg);
    std::vector<float> p_ln = file.f32("param.ln_w"), p_qk = file.f32("param.w_qk"),
                       p_vg = file.f32("param.w_vg"), p_r = file.f32("param.w_r"),
                       p_u = file.f32("param.u"), p_v = file.f32("param.vb"),
                       p_sum = file.f32("param.c_sum"), p_count = file.f32("param.c_count"),
                       p_o = file.f32("param.w_o");
    BlockTensors w;
    w.ln1_w = p_ln.data(), w.vq_qk_w = p_qk.data(), w.vq_vg_w = p_vg.data();
    w.vq_r_w = p_r.data(), w.vq_u = p_u.data(), w.vq_v = p_v.data();
    w.c_sum = p_sum.data(), w.c_count = p_count.data(), w.proj_w = p_o.data();
    std::vector<float> g_ln(p_ln.size()), g_qk(p_qk.size()), g_vg(p_vg.size()), g_r(p_r.size()),
        g_u(p_u.size()), g_v(p_v.size()), g_sum(p_sum.size()), g_count(p_count.size()),
        g_o(p_o.size());
    BlockTensors g;
    g.ln1_w = g_ln.data(), g.vq_qk_w = g_qk.data(), g.vq_vg_w = g_vg.data();
    g.vq_r_w = g_r.data(), g.vq_u = g_u.data(), g.vq_v = g_v.data();
    g.c_sum = g_sum.data(), g.c_count = g_count.data(), g.proj_w = g_o.data();

    std::vector<float> acts(layer.act_floats(N)), derived(layer.derived_floats()),
        scratch(layer.scratch_floats(N));
    const VqAttention::Acts a = layer.acts_at(acts.data(), N);
    VqAttention::Derived d = layer.derived_at(derived.data());
    const std::vector<float> x = file.f32("x"), dres = file.f32("dres");
    std::vector<float> xn(static_cast<std::size_t>(N) * C), rstd(N), res(xn.size());
    norm.forward(xn.data(), nullptr, rstd.data(), x.data(), w.ln1_w, nullptr, N);
    layer.derive(d, w);
    const float commit =
        layer.forward(res.data(), a, d, scratch.data(), xn.data(), nullptr, w, B, T, false);

    EXPECT_LT(test::scaled_max_error(res.data(), file.f32("res")), 1e-5) << "sublayer output";
    EXPECT_EQ(std::vector<std::int32_t>(a.z, a.z + N), file.i32("z")) << "codes";
    const float ref_commit = file.f32("commit")[0];
    EXPECT_NEAR(commit, ref_commit, 1e-5 * ref_commit) << "commitment loss";

    // J = sum(res * dres) + c_beta * mean_t |k_t - c_z|^2: the commitment's per-token scale 1/N.
    std::vector<float> dxn(xn.size()), dx(xn.size(), 0.f);
    layer.backward(dxn.data(), g, dres.data(), a, d, scratch.data(), xn.data(), nullptr, w, B, T,
                   1.f / static_cast<float>(N), false);
    norm.backward(dx.data(), g.ln1_w, nullptr, dxn.data(), x.data(), w.ln1_w, nullptr, rstd.data(),
                  N);
    double worst = 0;
    for (const auto& [name, got] : {std::pair<const char*, const float*>{"x", dx.data()},
                                    {"ln_w", g_ln.data()},
                                    {"w_qk", g_qk.data()},
                                    {"w_vg", g_vg.data()},
                                    {"w_r", g_r.data()},
                                    {"u", g_u.data()},
                                    {"vb", g_v.data()},
                                    {"w_o", g_o.data()}}) {
        const double err = test::scaled_max_error(got, file.f32(std::string("grad.") + name));
        EXPECT_LT(err, 1e-4) << "gradient of " << name << " (error relative to its max)";
        worst = std::max(worst, err);
    }
    // The codebook takes no gradient: backward leaves the batch's statistics in its slots.
    EXPECT_LT(test::scaled_max_error(g_sum.data(), file.f32("stat.sum")), 1e-5);
    EXPECT_EQ(g_count, file.f32("stat.count"));
    std::printf("%-16s output err %.2e, commit %.6f vs %.6f, worst gradient err %.2e\n",
                GetParam().c_str(), test::scaled_max_error(res.data(), file.f32("res")), commit,
                ref_commit, worst);
}

INSTANTIATE_TEST_SUITE_P(Cases, VqReference,
                         ::testing::Values("shga", "shga_partial", "shga_long_window"));

}  // namespace
}  // namespace meshlm

// muP's parameterization (model.mup.*) and per-tensor learning rates (optim.mup_rule), against
// seed 002's rules written out here: the registry's roles, the init of every tensor (sample
// standard deviations against the rule's), the zero inits, the 1/d_head attention scale, and
// the learning rate each tensor's first AdamW step actually moves it by, whole and sharded.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "meshlm/core/buffer.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/model/transformer_layout.h"
#include "meshlm/optim/mup_rule.h"
#include "meshlm/optim/optimizer.h"
#include "meshlm/optim/param_groups.h"
#include "meshlm/parallel/tp_shard.h"
#include "meshlm/train/learner.h"

namespace meshlm {
namespace {

ModelConfig mup_model(int D) {
    ModelConfig m;
    m.n_layer = 2, m.d_model = D, m.n_head = D / 64, m.vocab_size = 300, m.max_seq_len = 64;
    m.norm = "rmsnorm", m.position = "rope", m.tied_head = false, m.mup_enabled = true;
    return m;
}

double sample_std(const float* p, std::size_t n) {
    double s = 0, s2 = 0;
    for (std::size_t i = 0; i < n; ++i) s += p[i], s2 += double(p[i]) * p[i];
    const double mean = s / n;
    return std::sqrt(s2 / n - mean * mean);
}

TEST(Mup, RolesAreRegistryFacts) {
    const ParamLayout l = transformer_layout(mup_model(128));
    const std::map<std::string, std::string> want = {{"wte.weight", "embedding"},
                                                     {"h.0.ln_1.weight", "vector"},
                                                     {"h.0.attn.c_attn.weight", "hidden"},
                                                     {"h.0.attn.c_proj.weight", "hidden"},
                                                     {"h.1.mlp.c_fc.weight", "hidden"},
                                                     {"h.1.mlp.c_proj.weight", "hidden"},
                                                     {"ln_f.weight", "vector"},
                                                     {"lm_head.weight", "readout"}};
    for (const auto& [name, role] : want) EXPECT_EQ(l.at(name).mup_role, role) << name;
    ModelConfig gpt2;  // learned positions and biases: roles whatever the parameterization
    const ParamLayout g = transformer_layout(gpt2);
    EXPECT_EQ(g.at("wpe.weight").mup_role, "embedding");
    EXPECT_EQ(g.at("h.0.attn.c_attn.bias").mup_role, "vector");
}

TEST(Mup, InitFollowsTheSeedsRules) {
    const int D = 256, F = 4 * D;
    for (const char* u : {"mup", "sp", "zero"}) {
        ModelConfig m = mup_model(D);
        m.mup_u_init = u;
        const ParamLayout l = transformer_layout(m);
        Buffer<float> p(l.total());
        init_params(m, l, p.data(), 5);
        auto std_of = [&](const std::string& name) {
            const ParamSlice& s = l.at(name);
            return sample_std(p.data() + s.offset, s.numel);
        };
        // 20k+ samples each: sample std within ~1 % of the rule's.
        EXPECT_NEAR(std_of("wte.weight"), 1.0, 0.02);
        EXPECT_NEAR(std_of("h.0.attn.c_attn.weight"), 1.0 / std::sqrt(D), 0.02 / std::sqrt(D));
        EXPECT_NEAR(std_of("h.1.attn.c_proj.weight"), 1.0 / std::sqrt(D), 0.02 / std::sqrt(D));
        EXPECT_NEAR(std_of("h.0.mlp.c_fc.weight"), 1.0 / std::sqrt(D), 0.02 / std::sqrt(D));
        EXPECT_NEAR(std_of("h.0.mlp.c_proj.weight"), 1.0 / std::sqrt(F), 0.02 / std::sqrt(F));
        const double readout = std::string(u) == "mup"  ? 1.0 / D
                               : std::string(u) == "sp" ? 1.0 / std::sqrt(D)
                                                        : 0.0;
        EXPECT_NEAR(std_of("lm_head.weight"), readout, 0.02 * readout + 1e-12) << u;
    }
}

TEST(Mup, ZeroInitsOfQueriesAndResidualProjections) {
    ModelConfig m = mup_model(128);
    m.mup_q_init = "zero", m.mup_r_init = "zero";
    const ParamLayout l = transformer_layout(m);
    Buffer<float> p(l.total());
    init_params(m, l, p.data(), 9);
    const int HD = m.n_head * m.head_dim(), C = m.d_model;
    const ParamSlice& qkv = l.at("h.1.attn.c_attn.weight");
    const float* w = p.data() + qkv.offset;
    for (int i = 0; i < HD * C; ++i) ASSERT_EQ(w[i], 0.f) << "query element " << i;
    EXPECT_GT(sample_std(w + HD * C, qkv.numel - HD * C), 0.05);  // keys and values drawn
    for (const char* name : {"h.0.attn.c_proj.weight", "h.1.mlp.c_proj.weight"}) {
        const ParamSlice& s = l.at(name);
        EXPECT_EQ(sample_std(p.data() + s.offset, s.numel), 0.0) << name;
    }
    // A tensor-parallel rank draws exactly its part of the whole tensor (zero rows included).
    for (int rank = 0; rank < 2; ++rank) {
        const ParamLayout local = transformer_layout(m, 2);
        Buffer<float> mine(local.total()), want(local.total());
        init_params(m, local, 2, rank, mine.data(), 9, 0, local.total());
        tp_scatter(l, local, 2, rank, p.data(), want.data());
        for (const ParamSlice& s : local.slices())
            for (std::size_t i = 0; i < s.numel; ++i)
                ASSERT_EQ(mine[s.offset + i], want[s.offset + i]) << s.name << " rank " << rank;
    }
}

TEST(Mup, AttentionScaleIsOneOverHeadWidth) {
    ModelConfig m = mup_model(128);
    EXPECT_FLOAT_EQ(m.attention_scale(), 1.f / 64);
    m.mup_enabled = false;
    EXPECT_FLOAT_EQ(m.attention_scale(), 1.f / 8);
    m.qk_scale = 0.0884f;
    EXPECT_FLOAT_EQ(m.attention_scale(), 0.0884f);
    // The kernel's scale s equals the default 1/sqrt(D) applied to queries multiplied by
    // s * sqrt(D): forward outputs, and the backward's query gradient scaled back.
    const int B = 1, T = 37, H = 2, Hkv = 1, D = 16, W = (H + 2 * Hkv) * D;
    const float s = 1.f / D, k = s * std::sqrt(float(D));
    std::vector<float> qkv(B * T * W), pre(B * T * W), dout(B * T * H * D);
    for (std::size_t i = 0; i < qkv.size(); ++i) qkv[i] = std::sin(0.37f * i) * 1.5f;
    for (std::size_t i = 0; i < dout.size(); ++i) dout[i] = std::cos(0.11f * i);
    pre = qkv;
    for (int t = 0; t < B * T; ++t)
        for (int j = 0; j < H * D; ++j) pre[t * W + j] *= k;
    std::vector<float> y(B * T * H * D), y2(y.size()), lse(B * H * T), lse2(lse.size());
    kernels::attention_forward(y.data(), lse.data(), qkv.data(), B, T, H, Hkv, D, nullptr, nullptr,
                               s);
    kernels::attention_forward(y2.data(), lse2.data(), pre.data(), B, T, H, Hkv, D, nullptr);
    for (std::size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], y2[i], 2e-6f) << i;
    std::vector<float> dq(qkv.size()), dq2(qkv.size());
    kernels::attention_backward(dq.data(), dout.data(), y.data(), lse.data(), qkv.data(), B, T, H,
                                Hkv, D, nullptr, nullptr, s);
    kernels::attention_backward(dq2.data(), dout.data(), y2.data(), lse2.data(), pre.data(), B, T,
                                H, Hkv, D, nullptr);
    for (int t = 0; t < B * T; ++t)
        for (int j = 0; j < W; ++j) {
            const float want = j < H * D ? dq2[t * W + j] * k : dq2[t * W + j];
            ASSERT_NEAR(dq[t * W + j], want, 2e-5f * (1.f + std::fabs(want))) << t << "," << j;
        }
}

TEST(Mup, LearningRateRules) {
    OptimConfig c;
    const int D = 512, base = 128;
    EXPECT_EQ(mup_lr_scale(c, "hidden", 512, D, base).lr, 1.f);  // sp
    c.mup_rule = "mup";
    EXPECT_FLOAT_EQ(mup_lr_scale(c, "hidden", 2048, D, base).lr, 0.25f);
    EXPECT_FLOAT_EQ(mup_lr_scale(c, "readout", 512, D, base).lr, 0.25f);
    EXPECT_EQ(mup_lr_scale(c, "embedding", 300, D, base).lr, 1.f);
    EXPECT_EQ(mup_lr_scale(c, "vector", 1, D, base).lr, 1.f);
    EXPECT_EQ(mup_lr_scale(c, "hidden", 2048, D, base).eps, 1.f);
    c.mup_eps_scaling = true;
    EXPECT_FLOAT_EQ(mup_lr_scale(c, "hidden", 2048, D, base).eps, 0.25f);
    c.mup_rule = "abs_mup";
    EXPECT_FLOAT_EQ(mup_lr_scale(c, "hidden", 2048, D, base).lr, 1.f / 2048);  // w_fo: 1/d_ff
    EXPECT_FLOAT_EQ(mup_lr_scale(c, "readout", 512, D, base).lr, 1.f / 512);
    EXPECT_EQ(mup_lr_scale(c, "embedding", 300, D, base).lr, 1.f);
}

// AdamW's first step moves every element with |g| >> eps by exactly its learning rate: each
// tensor's step shows the rate the rule gave it, on the whole layout and on a TP shard.
TEST(Mup, EachTensorStepsAtItsRate) {
    const ModelConfig m = mup_model(256);
    OptimConfig c;
    c.mup_rule = "abs_mup", c.weight_decay = 0.f, c.lr = 0.5f;
    for (int model : {1, 2}) {
        const ParamLayout l = transformer_layout(m, model);
        std::vector<float> p(l.total(), 0.f), g(l.total());
        for (std::size_t i = 0; i < g.size(); ++i) g[i] = (i % 3 == 0 ? -1.f : 1.f) * 0.01f;
        Optimizer opt(c, param_groups(l, c, m.d_model, m.mup_d_base), l.total());
        opt.step(p.data(), g.data(), c.lr);
        for (const ParamSlice& s : l.slices()) {
            const bool matrix = s.mup_role == "hidden" || s.mup_role == "readout";
            const double rate = matrix ? c.lr / double(s.full_shape.dims[1]) : c.lr;
            for (std::size_t i = 0; i < s.numel; i += 97) {
                const std::size_t at = s.offset + i;
                ASSERT_NEAR(std::fabs(p[at]), rate, 1e-5 * rate)
                    << s.name << " (TP " << model << ")";
                ASSERT_LT(p[at] * g[at], 0.f) << s.name;
            }
        }
    }
}

}  // namespace
}  // namespace meshlm

// The optimizers, schedules, clipping modes and weight-decay modes, each against an independent
// reference: Lion against tools/reference/optimizer_reference.py (torch, float64), the schedules
// against their formulas evaluated by hand, clipping and decay against closed forms (Adafactor
// against optax: adafactor_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "meshlm/io/safetensors.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/optim/optimizer.h"
#include "meshlm/optim/schedule.h"
#include "test_util.h"

namespace meshlm {
namespace {

TEST(Lion, MatchesTheTorchReferenceStepByStep) {
    SafetensorsFile f(test::fixture("lion_steps.safetensors"));
    const int cases = std::stoi(f.metadata().at("cases")),
              steps = std::stoi(f.metadata().at("steps"));
    const std::size_t n = std::stoul(f.metadata().at("n"));
    for (int k = 0; k < cases; ++k) {
        const std::string K = std::to_string(k);
        const auto h = f.f32("hyper_" + K);
        const float lr = h[0], b1 = h[1], b2 = h[2], wd = h[3];
        std::vector<float> p = f.f32("p0_" + K), m(n, 0.f);
        const auto g = f.f32("g_" + K), p_ref = f.f32("p_" + K), m_ref = f.f32("m_" + K);
        // Through the optimizer: one decayed group (coupled decay = the kernel's lr * wd).
        OptimConfig cfg;
        cfg.name = "lion", cfg.beta1 = b1, cfg.beta2 = b2, cfg.weight_decay = wd;
        Optimizer opt(cfg, {{0, n, true}}, n);
        EXPECT_EQ(opt.v(), nullptr);
        std::vector<float> q = p;
        for (int s = 0; s < steps; ++s) {
            const float* gs = g.data() + s * n;
            kernels::lion(p.data(), gs, m.data(), n, lr, b1, b2, wd);
            opt.step(q.data(), gs, lr);
            for (std::size_t i = 0; i < n; ++i) {
                // Each step moves p by lr exactly (sign) plus lr*wd*p: float rounding only.
                const float ref = p_ref[s * n + i];
                ASSERT_NEAR(p[i], ref, 4e-7f * (1.f + std::fabs(ref)))
                    << "case " << k << " step " << s + 1 << " i " << i;
                ASSERT_NEAR(m[i], m_ref[s * n + i], 1e-7f + 1e-6f * std::fabs(m_ref[s * n + i]))
                    << "case " << k << " step " << s + 1 << " i " << i;
                ASSERT_EQ(q[i], p[i]) << "optimizer and kernel differ at step " << s + 1;
            }
        }
        EXPECT_EQ(std::vector<float>(opt.m(), opt.m() + n), m);
    }
}

TEST(Optimizer, StateCountsAndUnknownNames) {
    EXPECT_EQ(optimizer_state_count("adamw"), 2);
    EXPECT_EQ(optimizer_state_count("lion"), 1);
    EXPECT_EQ(optimizer_state_count("adafactor"), 1);
    EXPECT_FALSE(optimizer_slots("adafactor").m);
    try {
        optimizer_state_count("sgd");
        FAIL() << "sgd accepted";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("adamw, lion or adafactor"), std::string::npos)
            << e.what();
    }
}

// With a zero gradient AdamW's and Lion's updates vanish and only the decay moves p:
// coupled p *= 1 - lr_t wd; independent p *= 1 - (lr_t / lr) wd.
TEST(Optimizer, WeightDecayModes) {
    const std::size_t n = 5;
    const std::vector<float> p0 = {1.f, -2.f, 0.5f, 3.f, -0.25f};
    for (const char* name : {"adamw", "lion", "adafactor"})
        for (const char* mode : {"coupled", "independent"}) {
            OptimConfig cfg;
            cfg.name = name, cfg.wd_mode = mode, cfg.lr = 0.02f, cfg.weight_decay = 0.1f;
            const float lr_t = 0.005f;  // a quarter of the peak: the schedule's factor is 0.25
            const double factor =
                std::string(mode) == "coupled" ? 1.0 - 0.005 * 0.1 : 1.0 - 0.25 * 0.1;
            ParamLayout layout;  // one tensor per group (Adafactor's pieces stay in one)
            layout.add("a", Shape{3}, -1), layout.add("b", Shape{2}, -1);
            const std::size_t b = layout.at("b").offset;
            Optimizer opt(cfg, {{0, 3, true}, {b, 2, false}}, layout.total(),
                          adafactor_plan(layout, 1, 0, 0, layout.total(), cfg));
            std::vector<float> p(layout.total(), 0.f), g(layout.total(), 0.f);
            std::copy_n(p0.begin(), 3, p.begin()), std::copy_n(p0.begin() + 3, 2, p.begin() + b);
            opt.step(p.data(), g.data(), lr_t);
            for (std::size_t i = 0; i < n; ++i) {
                const double want = i < 3 ? p0[i] * factor : p0[i];
                EXPECT_NEAR(p[i < 3 ? i : b + i - 3], want, 1e-6 * std::fabs(want))
                    << name << " " << mode << " " << i;
            }
        }
}

TEST(Clipping, NormScalesAndValueClamps) {
    const std::vector<float> g0 = {3.f, -4.f, 0.5f, -0.25f};  // norm sqrt(25.3125)
    const double norm = std::sqrt(25.3125);
    OptimConfig cfg;
    cfg.grad_clip = 1.f;
    std::vector<float> g = g0;
    EXPECT_NEAR(clip_gradients(cfg, g.data(), g.size()), norm, 1e-6);
    for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], g0[i] / (norm + 1e-6), 1e-6) << i;
    cfg.clip_mode = "value";
    g = g0;
    EXPECT_NEAR(clip_gradients(cfg, g.data(), g.size()), norm, 1e-6);  // reported before
    EXPECT_EQ(g, (std::vector<float>{1.f, -1.f, 0.5f, -0.25f}));
    cfg.grad_clip = 0.f;  // off in both modes
    g = g0;
    clip_gradients(cfg, g.data(), g.size());
    EXPECT_EQ(g, g0);
}

// Norm clipping folded into AdamW and Lion (the trainer's path) updates bitwise as clipping the
// gradients first, over steps where the clip acts and where it does not; value clipping and
// Adafactor never fold.
TEST(Clipping, FoldedIntoTheOptimizerIsBitwiseClippingFirst) {
    const std::size_t n = 1000;
    std::vector<float> p0(n);
    for (std::size_t i = 0; i < n; ++i) p0[i] = std::sin(0.37f * static_cast<float>(i));
    for (const char* name : {"adamw", "lion"}) {
        OptimConfig cfg;
        cfg.name = name;
        cfg.grad_clip = 1.f;
        cfg.weight_decay = 0.1f;
        const std::vector<ParamGroup> groups = {{0, 600, true}, {600, 400, false}};
        Optimizer scaled(cfg, groups, n), folded(cfg, groups, n);
        ASSERT_TRUE(folded.folds_grad_scale());
        std::vector<float> pa = p0, pb = p0;
        for (int t = 0; t < 6; ++t) {
            const float size = t % 2 ? 0.01f : 3.f;  // odd steps: under the threshold
            std::vector<float> ga(n), gb;
            for (std::size_t i = 0; i < n; ++i)
                ga[i] = size * std::cos(0.11f * static_cast<float>(i * (t + 1)));
            gb = ga;
            const float na = clip_gradients(cfg, ga.data(), n);
            float factor = 0.f;
            const float nb = clip_gradients(cfg, gb.data(), n, &factor);
            ASSERT_EQ(na, nb);
            if (t % 2) {
                EXPECT_EQ(factor, 1.f);
            } else {
                EXPECT_LT(factor, 1.f);
                EXPECT_NE(ga, gb);  // folded: the gradients stay as they were
            }
            scaled.step(pa.data(), ga.data(), 1e-2f);
            folded.step(pb.data(), gb.data(), 1e-2f, factor);
            ASSERT_EQ(pa, pb) << name << " step " << t;
            ASSERT_EQ(0, std::memcmp(scaled.m(), folded.m(), n * sizeof(float)));
        }
    }
    OptimConfig value;
    value.grad_clip = 1.f;
    value.clip_mode = "value";
    std::vector<float> g = {3.f, -4.f};
    float factor = 0.f;
    clip_gradients(value, g.data(), g.size(), &factor);
    EXPECT_EQ(factor, 1.f);
    EXPECT_EQ(g, (std::vector<float>{1.f, -1.f}));
    OptimConfig ada;
    ada.name = "adafactor";
    EXPECT_FALSE(Optimizer(ada, {{0, 2, true}}, 2).folds_grad_scale());
}

// Each schedule at chosen steps, the expected values worked out by hand from the formulas in
// schedule.h: lr 1, end 0.1, 10 warmup steps from 0.2, decay ending at step 50 of 100.
TEST(Schedule, EachPinnedAgainstItsFormula) {
    OptimConfig c;
    c.lr = 1.f, c.end_lr = 0.1f, c.warmup_steps = 10, c.warmup_start = 0.2f, c.decay_steps = 50;
    const long total = 100;
    auto at = [&](const char* schedule, long step) {
        c.schedule = schedule;
        return lr_at(c, step, total);
    };
    for (const char* s : {"cosine", "linear", "inverse_sqrt", "constant"}) {
        EXPECT_NEAR(at(s, 0), 0.28, 1e-6) << s;  // 0.2 + 0.8 * 1/10
        EXPECT_NEAR(at(s, 4), 0.6, 1e-6) << s;   // 0.2 + 0.8 * 5/10
        EXPECT_NEAR(at(s, 9), 1.0, 1e-6) << s;
    }
    EXPECT_NEAR(at("cosine", 10), 1.0, 1e-6);
    EXPECT_NEAR(at("cosine", 30), 0.55, 1e-6);  // half way: 0.1 + 0.9 * (1 + cos(pi/2)) / 2
    EXPECT_NEAR(at("cosine", 20), 0.1 + 0.45 * (1 + std::sqrt(0.5)), 1e-6);  // p = 1/4
    EXPECT_NEAR(at("cosine", 50), 0.1, 1e-6);
    EXPECT_NEAR(at("cosine", 99), 0.1, 1e-6);  // the flat tail after decay_steps
    EXPECT_NEAR(at("linear", 30), 0.55, 1e-6);
    EXPECT_NEAR(at("linear", 40), 0.325, 1e-6);  // 1 - 0.9 * 3/4
    EXPECT_NEAR(at("linear", 75), 0.1, 1e-6);
    EXPECT_NEAR(at("inverse_sqrt", 39), 0.5, 1e-6);                   // sqrt(10 / 40)
    EXPECT_NEAR(at("inverse_sqrt", 90), std::sqrt(10.0 / 51), 1e-6);  // held from step 50
    c.end_lr = 0.45f;
    EXPECT_NEAR(at("inverse_sqrt", 90), 0.45, 1e-6);  // never below end_lr
    EXPECT_NEAR(at("constant", 77), 1.0, 1e-6);
    // Without decay_steps the horizon is train.steps; warmup_start 0 is lr * (step + 1) / W.
    c.end_lr = 0.1f, c.decay_steps = 0, c.warmup_start = 0.f;
    EXPECT_NEAR(at("linear", 0), 0.1, 1e-6);
    EXPECT_NEAR(at("linear", 55), 0.55, 1e-6);  // p = 45 / 90
}

}  // namespace
}  // namespace meshlm

// log.diag_interval's pieces: the gradient noise scale estimator against the paper's formulas
// computed here on a known set of per-example gradients, and against the noise scale it must
// recover from gradients of a known distribution; the Learner's recorded sums against what the
// step did (the first micro-batch's gradient norm, the update), with the step itself unchanged.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "meshlm/core/rng.h"
#include "meshlm/data/synthetic.h"
#include "meshlm/train/diagnostics.h"
#include "meshlm/train/learner.h"
#include "test_util.h"

namespace meshlm {
namespace {

using Vec = std::vector<long double>;

// Mean of rows [0, n) of per-example gradients, and its squared norm.
long double mean_sq(const std::vector<Vec>& g, std::size_t n) {
    Vec mean(g[0].size(), 0);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t k = 0; k < mean.size(); ++k) mean[k] += g[i][k] / n;
    long double s = 0;
    for (long double x : mean) s += x * x;
    return s;
}

// Per-example gradients G + noise, noise N(0, sigma^2) per coordinate: tr(Sigma) = D sigma^2.
std::vector<Vec> draw(Philox& rng, const Vec& G, double sigma, std::size_t n) {
    std::vector<Vec> g(n, G);
    for (Vec& row : g)
        for (long double& x : row) x += sigma * rng.normal();
    return g;
}

TEST(GradientNoiseScale, MatchesThePapersFormulasOnAKnownGradientSet) {
    // Three steps of 6 examples in 3 dimensions; small batch = the first 2.
    Philox rng(7, 1);
    const Vec G = {0.5L, -0.25L, 1.0L};
    const double decay = 0.8;
    GradientNoiseScale gns(decay);
    long double g2_avg = 0, s_avg = 0, weight = 0;
    for (int step = 0; step < 3; ++step) {
        const auto g = draw(rng, G, 0.7, 6);
        const long double small = mean_sq(g, 2), big = mean_sq(g, 6), bs = 2, bb = 6;
        // Appendix A: |G|^2 = (B_big |g_big|^2 - B_small |g_small|^2) / (B_big - B_small),
        // S = (|g_small|^2 - |g_big|^2) / (1/B_small - 1/B_big); moving averages, bias-corrected.
        const long double g2 = (bb * big - bs * small) / (bb - bs);
        const long double s = (small - big) / (1 / bs - 1 / bb);
        g2_avg = decay * g2_avg + (1 - decay) * g2;
        s_avg = decay * s_avg + (1 - decay) * s;
        weight = decay * weight + (1 - decay);
        const auto e = gns.add(2, static_cast<double>(small), 6, static_cast<double>(big));
        EXPECT_NEAR(e.g2, static_cast<double>(g2), 1e-12 * std::fabs(static_cast<double>(g2)));
        EXPECT_NEAR(e.s, static_cast<double>(s), 1e-12 * std::fabs(static_cast<double>(s)));
        const double want = static_cast<double>((s_avg / weight) / (g2_avg / weight));
        EXPECT_NEAR(e.b_simple, want, 1e-12 * std::fabs(want)) << "step " << step;
    }
    EXPECT_THROW(gns.add(6, 1, 6, 1), Error);  // no smaller batch
}

TEST(GradientNoiseScale, RecoversTheNoiseScaleOfAKnownDistribution) {
    // |G|^2 = 1, tr(Sigma) = 32 * 1.25^2 = 50: B_simple = 50.
    const std::size_t D = 32;
    Vec G(D, 0);
    G[0] = 0.6L, G[1] = 0.8L;
    Philox rng(11, 2);
    GradientNoiseScale gns(0.995);
    GradientNoiseScale::Estimate e{};
    for (int step = 0; step < 3000; ++step) {
        const auto g = draw(rng, G, 1.25, 64);
        e = gns.add(8, static_cast<double>(mean_sq(g, 8)), 64, static_cast<double>(mean_sq(g, 64)));
    }
    std::printf("B_simple %.2f (true 50), |G|^2 %.3f (1), tr(Sigma) %.2f (50)\n", e.b_simple,
                e.g2_avg, e.s_avg);
    EXPECT_NEAR(e.b_simple, 50.0, 5.0);
    EXPECT_NEAR(e.s_avg, 50.0, 2.5);
}

double sum_sq(const float* x, std::size_t n) {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
    return s;
}

TEST(DiagSums, LearnerRecordsTheFirstMicroBatchAndTheUpdateWithoutChangingTheStep) {
    const ModelConfig m = test::tiny_model();
    OptimConfig o;
    o.grad_clip = 0;  // the norm reported is the gradient's, unclipped either way
    const int B = 2, T = 16, accum = 2;
    std::vector<std::int32_t> tokens(accum * B * T), targets(accum * B * T);
    Philox rng(3, 4);
    random_tokens(accum * B, T, m.vocab_size, rng, tokens.data(), targets.data());
    for (int i = 0; i < 5; ++i) targets[i] = -1;  // unequal scored counts: 27 and 32

    Learner plain(m, o, B, T, 10), watched(m, o, B, T, 10), first(m, o, B, T, 10);
    for (Learner* l : {&plain, &watched, &first}) l->init_params(5);
    const std::size_t n = plain.layout().total();
    const std::vector<float> before(watched.params(), watched.params() + n);
    const StepStats a = plain.train_step(tokens.data(), targets.data(), accum);
    watched.record_diagnostics();
    const StepStats b = watched.train_step(tokens.data(), targets.data(), accum);
    // Bitwise the same step.
    EXPECT_EQ(std::memcmp(&a.loss, &b.loss, sizeof a.loss), 0);
    EXPECT_EQ(std::memcmp(plain.params(), watched.params(), n * sizeof(float)), 0);

    // The first micro-batch alone, as a step: its gradient norm is |g_small|.
    const StepStats f = first.train_step(tokens.data(), targets.data(), 1);
    const DiagSums& d = watched.diagnostics();
    ASSERT_EQ(d.small, DiagSums::Small::first_micro);
    EXPECT_EQ(d.small_tokens, B * T - 5);
    EXPECT_EQ(d.big_tokens, accum * B * T - 5);
    const double k = d.big_tokens / d.small_tokens;
    const double got = std::sqrt(d.grad_sq) * k;
    EXPECT_NEAR(got, f.grad_norm, 2e-5 * f.grad_norm);

    // The update's and the weights' sums per tensor, from the parameters before and after.
    const float* after = watched.params();
    const auto& slices = watched.layout().slices();
    for (std::size_t i = 0; i < slices.size(); ++i) {
        double du = 0;
        for (std::size_t j = slices[i].offset; j < slices[i].offset + slices[i].numel; ++j)
            du += (static_cast<double>(after[j]) - before[j]) *
                  (static_cast<double>(after[j]) - before[j]);
        EXPECT_DOUBLE_EQ(d.update_sq[i], du) << slices[i].name;
        EXPECT_DOUBLE_EQ(d.weight_sq[i], sum_sq(after + slices[i].offset, slices[i].numel))
            << slices[i].name;
    }
    // The residual stream after each block: counted over every token of both micro-batches.
    ASSERT_EQ(d.resid.size(), 2u * m.n_layer);
    for (int l = 0; l < m.n_layer; ++l) {
        EXPECT_EQ(d.resid[m.n_layer + l], double(accum) * B * T * m.d_model);
        EXPECT_GT(d.resid[l], 0);
    }
}

TEST(DiagSums, OneProcessWithoutAccumulationSaysWhyThereIsNoNoiseScale) {
    const ModelConfig m = test::tiny_model();
    Learner l(m, OptimConfig{}, 2, 16, 10);
    l.init_params(1);
    std::vector<std::int32_t> tokens(32), targets(32);
    Philox rng(1, 1);
    random_tokens(2, 16, m.vocab_size, rng, tokens.data(), targets.data());
    l.record_diagnostics();
    l.train_step(tokens.data(), targets.data(), 1);
    EXPECT_EQ(l.diagnostics().small, DiagSums::Small::none);
    EXPECT_NE(l.diagnostics().missing.find("train.grad_accum"), std::string::npos);
}

}  // namespace
}  // namespace meshlm

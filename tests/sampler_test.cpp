// sample_token against a plain reference written here in double: the softmax of logits / T,
// restricted to the k most likely (ties by id) and then to the smallest prefix of that order
// holding p of the mass, renormalized. Small vocabularies are checked by the frequencies of many
// draws (a chi-square bound), the 49152-token one by where its draws may fall (the sampler grows
// its sorted prefix in rounds there; the reference sorts everything).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "meshlm/infer/sampler.h"

namespace meshlm {
namespace {

struct Reference {
    std::vector<double> prob;  // over the whole vocabulary, 0 outside the kept set
    double margin = 1;         // how far the kept prefix's mass is from the top-p cut
};

Reference reference(const std::vector<float>& z, double T, int top_k, double top_p) {
    const int V = static_cast<int>(z.size());
    std::vector<int> order(V);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return z[a] > z[b] || (z[a] == z[b] && a < b); });
    const double mx = z[order[0]] / T;
    int keep = top_k > 0 && top_k < V ? top_k : V;
    double total = 0;
    for (int i = 0; i < keep; ++i) total += std::exp(z[order[i]] / T - mx);
    Reference r;
    if (top_p < 1) {
        double cum = 0;
        for (int i = 0; i < keep; ++i) {
            const double before = cum;
            cum += std::exp(z[order[i]] / T - mx) / total;
            if (cum >= top_p) {
                r.margin = std::min(cum - top_p, top_p - before);
                keep = i + 1;
                break;
            }
        }
    }
    r.prob.assign(V, 0.0);
    double kept = 0;
    for (int i = 0; i < keep; ++i) kept += std::exp(z[order[i]] / T - mx);
    for (int i = 0; i < keep; ++i) r.prob[order[i]] = std::exp(z[order[i]] / T - mx) / kept;
    return r;
}

std::vector<float> random_logits(int V, float scale, std::uint64_t seed) {
    Philox rng(seed, 7);
    std::vector<float> z(V);
    for (float& x : z) x = scale * rng.normal();
    return z;
}

std::vector<int> draw_counts(const std::vector<float>& z, const SamplingOptions& opt, int n) {
    Philox rng(opt.seed, 1);
    std::vector<std::pair<float, std::int32_t>> scratch;
    std::vector<int> counts(z.size(), 0);
    for (int i = 0; i < n; ++i)
        ++counts.at(sample_token(z.data(), static_cast<int>(z.size()), opt, rng, scratch));
    return counts;
}

// Pearson's chi-square of the counts against n draws of ref over its support; a draw outside
// the support fails the test directly.
double chi_square(const std::vector<int>& counts, const std::vector<double>& ref, int n) {
    double chi2 = 0;
    for (std::size_t v = 0; v < ref.size(); ++v) {
        if (ref[v] == 0) {
            EXPECT_EQ(counts[v], 0) << "token " << v << " is outside the kept set";
            continue;
        }
        const double e = ref[v] * n, d = counts[v] - e;
        chi2 += d * d / e;
    }
    return chi2;
}

SamplingOptions options(float T, int top_k, float top_p) {
    SamplingOptions o;
    o.temperature = T, o.top_k = top_k, o.top_p = top_p, o.seed = 11;
    return o;
}

// With at most 11 degrees of freedom, chi-square exceeds 40 with probability below 1e-4; a
// sampler off by a few percent in any probability lands in the hundreds at these draw counts.
constexpr double kChi2Bound = 40;
constexpr int kDraws = 200000;

TEST(Sampler, PlainTemperatureDrawsTheSoftmax) {
    const std::vector<float> z = {1.5f, -0.3f, 0.f, 2.2f, 0.7f, -1.f, 0.7f, 1.1f};
    const auto opt = options(0.7f, 0, 1.f);
    const Reference r = reference(z, opt.temperature, 0, 1);
    EXPECT_LT(chi_square(draw_counts(z, opt, kDraws), r.prob, kDraws), kChi2Bound);
}

TEST(Sampler, TopKDrawsOnlyTheKMostLikelyRenormalized) {
    const auto z = random_logits(10, 1.f, 3);
    const auto opt = options(1.3f, 3, 1.f);
    const Reference r = reference(z, opt.temperature, 3, 1);
    EXPECT_EQ(std::count_if(r.prob.begin(), r.prob.end(), [](double p) { return p > 0; }), 3);
    EXPECT_LT(chi_square(draw_counts(z, opt, kDraws), r.prob, kDraws), kChi2Bound);
}

TEST(Sampler, TopPKeepsTheSmallestPrefixHoldingP) {
    const auto z = random_logits(12, 1.5f, 5);
    const auto opt = options(1.f, 0, 0.8f);
    const Reference r = reference(z, 1, 0, 0.8);
    ASSERT_GT(r.margin, 1e-4) << "pick logits whose nucleus is not decided by rounding";
    const auto kept = std::count_if(r.prob.begin(), r.prob.end(), [](double p) { return p > 0; });
    EXPECT_GT(kept, 1);
    EXPECT_LT(kept, 12);
    EXPECT_LT(chi_square(draw_counts(z, opt, kDraws), r.prob, kDraws), kChi2Bound);
}

TEST(Sampler, TopKThenTopP) {
    const auto z = random_logits(10, 0.6f, 9);
    const auto opt = options(0.9f, 6, 0.7f);
    const Reference r = reference(z, opt.temperature, 6, 0.7);
    ASSERT_GT(r.margin, 1e-4);
    const auto kept = std::count_if(r.prob.begin(), r.prob.end(), [](double p) { return p > 0; });
    EXPECT_GT(kept, 1);
    EXPECT_LT(kept, 6);
    EXPECT_LT(chi_square(draw_counts(z, opt, kDraws), r.prob, kDraws), kChi2Bound);
}

// Flat logits put thousands of tokens in the nucleus (the sampler's sorted prefix must grow
// past 256 and 2048), peaked ones a few (its first round decides). The draws must fall in the
// nucleus, and as often past rank 256 and past rank 2048 as its probabilities say.
TEST(Sampler, TopPOverALargeVocabularyDrawsTheNucleus) {
    const int V = 49152, n = 400;
    for (float scale : {0.5f, 6.f}) {
        const auto z = random_logits(V, scale, 21);
        const auto opt = options(1.f, 0, 0.9f);
        const Reference r = reference(z, 1, 0, 0.9);
        ASSERT_GT(r.margin, 1e-7) << "scale " << scale;
        std::vector<int> order(V);
        std::iota(order.begin(), order.end(), 0);
        std::sort(order.begin(), order.end(),
                  [&](int a, int b) { return z[a] > z[b] || (z[a] == z[b] && a < b); });
        const auto kept =
            std::count_if(r.prob.begin(), r.prob.end(), [](double p) { return p > 0; });
        if (scale < 1)
            EXPECT_GT(kept, 2048);
        else
            EXPECT_LT(kept, 256);
        const auto counts = draw_counts(z, opt, n);
        for (int rank : {256, 2048}) {
            double expected = 0, drawn = 0;
            for (int i = rank; i < V; ++i) {
                expected += r.prob[order[i]];
                drawn += counts[order[i]];
            }
            // 0.1 is over four standard deviations of the drawn fraction at n = 400.
            EXPECT_NEAR(drawn / n, expected, 0.1) << "scale " << scale << ", past rank " << rank;
        }
        for (int v = 0; v < V; ++v)
            EXPECT_TRUE(counts[v] == 0 || r.prob[v] > 0) << "token " << v << " outside the nucleus";
    }
}

TEST(Sampler, TiesBreakByIdAndTheSameSeedDrawsTheSame) {
    const std::vector<float> flat(64, 0.25f);
    auto opt = options(1.f, 1, 1.f);
    EXPECT_EQ(draw_counts(flat, opt, 100)[0], 100);  // the most likely of equals: the lowest id
    const auto z = random_logits(1000, 2.f, 4);
    for (int k : {0, 50}) {
        opt = options(0.8f, k, k ? 1.f : 0.95f);
        EXPECT_EQ(draw_counts(z, opt, 500), draw_counts(z, opt, 500)) << "top_k " << k;
    }
}

TEST(Sampler, GreedyIsTheArgmax) {
    const auto z = random_logits(5000, 1.f, 8);
    Philox rng(1, 1);
    std::vector<std::pair<float, std::int32_t>> scratch;
    const auto best = std::max_element(z.begin(), z.end()) - z.begin();
    EXPECT_EQ(sample_token(z.data(), 5000, options(0.f, 0, 1.f), rng, scratch), best);
}

}  // namespace
}  // namespace meshlm

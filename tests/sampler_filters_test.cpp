// Typical sampling and eta-sampling against transformers' own logits warpers evaluated in
// float64 (tools/reference/sampling_reference.py -> fixtures/sampling_reference.txt): the kept
// set and its renormalized probabilities on fixed logits, alone and composed with temperature,
// top-k and top-p; then sample_token's draws against those probabilities by chi-square.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "meshlm/infer/sampler.h"
#include "test_util.h"

namespace meshlm {
namespace {

struct Case {
    int row = 0;
    SamplingOptions opt;
    std::map<int, double> prob;  // the kept ids and their probabilities
};

struct Fixture {
    std::vector<std::vector<float>> logits;
    std::vector<Case> cases;
};

Fixture load() {
    std::ifstream in(test::fixture("sampling_reference.txt"));
    EXPECT_TRUE(in) << "missing fixture sampling_reference.txt";
    Fixture f;
    for (std::string line; std::getline(in, line);) {
        std::istringstream s(line);
        std::string kind;
        s >> kind;
        if (kind == "logits") {
            int r = 0;
            s >> r;
            f.logits.emplace_back();
            for (float x; s >> x;) f.logits.back().push_back(x);
        } else if (kind == "case") {
            Case c;
            int n = 0;
            s >> c.row >> c.opt.temperature >> c.opt.top_k >> c.opt.top_p >> c.opt.typical_p >>
                c.opt.eta_cutoff >> n;
            for (int i = 0; i < n; ++i) {
                std::string pair;
                s >> pair;
                const auto colon = pair.find(':');
                c.prob[std::stoi(pair.substr(0, colon))] = std::stod(pair.substr(colon + 1));
            }
            f.cases.push_back(c);
        }
    }
    return f;
}

std::string describe(const Case& c) {
    std::ostringstream o;
    o << "row " << c.row << " T " << c.opt.temperature << " top_k " << c.opt.top_k << " top_p "
      << c.opt.top_p << " typical_p " << c.opt.typical_p << " eta " << c.opt.eta_cutoff;
    return o.str();
}

TEST(SamplerFilters, KeepTransformersSetsWithTheirRenormalizedMass) {
    const Fixture f = load();
    ASSERT_GE(f.cases.size(), 9u);
    std::vector<std::pair<float, std::int32_t>> scratch;
    for (const Case& c : f.cases) {
        const std::vector<float>& z = f.logits.at(c.row);
        const int n = sampling_candidates(z.data(), static_cast<int>(z.size()), c.opt, scratch);
        double total = 0;
        for (int i = 0; i < n; ++i) total += scratch[i].first;
        std::map<int, double> got;
        for (int i = 0; i < n; ++i) got[scratch[i].second] = scratch[i].first / total;
        ASSERT_EQ(got.size(), c.prob.size()) << describe(c);
        for (const auto& [id, p] : c.prob) {
            ASSERT_TRUE(got.count(id)) << describe(c) << ": token " << id << " dropped";
            // Weights are float exps of float logits / T: a few float ulps of each probability.
            EXPECT_NEAR(got[id], p, 1e-6 * std::max(p, 1e-3)) << describe(c) << " token " << id;
        }
    }
}

// Pearson's chi-square of n draws against the reference probabilities; the bound is the
// 1 - 1e-4 quantile of chi-square with k - 1 degrees of freedom (Wilson-Hilferty).
TEST(SamplerFilters, DrawsFollowTheFilteredDistribution) {
    const Fixture f = load();
    constexpr int kDraws = 100000;
    std::vector<std::pair<float, std::int32_t>> scratch;
    for (const Case& c : f.cases) {
        const std::vector<float>& z = f.logits.at(c.row);
        SamplingOptions opt = c.opt;
        opt.seed = 17;
        Philox rng(opt.seed, 1);
        std::map<int, int> counts;
        for (int i = 0; i < kDraws; ++i)
            ++counts[sample_token(z.data(), static_cast<int>(z.size()), opt, rng, scratch)];
        double chi2 = 0;
        for (const auto& [id, k] : counts)
            EXPECT_TRUE(c.prob.count(id)) << describe(c) << ": drew token " << id;
        for (const auto& [id, p] : c.prob) {
            const double e = p * kDraws, d = counts[id] - e;
            chi2 += d * d / e;
        }
        const double k = static_cast<double>(c.prob.size()) - 1, zq = 3.719;  // z of 1 - 1e-4
        const double bound = k * std::pow(1 - 2 / (9 * k) + zq * std::sqrt(2 / (9 * k)), 3);
        EXPECT_LT(chi2, bound) << describe(c);
    }
}

}  // namespace
}  // namespace meshlm

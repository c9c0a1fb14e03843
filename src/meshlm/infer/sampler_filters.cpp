// Typical and eta filters (sampler_filters.h). Probabilities and entropies are in double from
// the float weights, so the sets match transformers' float64 evaluation of the same logits.
#include "meshlm/infer/sampler_filters.h"

#include <algorithm>
#include <cmath>

namespace meshlm {
namespace {

struct Dist {
    double total = 0, entropy = 0;
};

// The candidates' total weight and the entropy of their renormalized distribution.
Dist distribution(const std::vector<Candidate>& cand, int n) {
    Dist d;
    for (int i = 0; i < n; ++i) d.total += cand[i].first;
    for (int i = 0; i < n; ++i) {
        const double p = cand[i].first / d.total;
        if (p > 0) d.entropy -= p * std::log(p);
    }
    return d;
}

}  // namespace

int typical_filter(std::vector<Candidate>& cand, int n, double mass) {
    const Dist d = distribution(cand, n);
    // Surprisal distance |-log p - H|; a zero weight (underflowed) is infinitely far.
    auto distance = [&](const Candidate& c) {
        return c.first > 0 ? std::abs(-std::log(c.first / d.total) - d.entropy) : INFINITY;
    };
    std::vector<std::pair<double, Candidate>> order(n);
    for (int i = 0; i < n; ++i) order[i] = {distance(cand[i]), cand[i]};
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
        return a.first < b.first || (a.first == b.first && a.second.second < b.second.second);
    });
    // transformers: last = #(prefix sums < mass), clamped to n - 1; keep every candidate whose
    // distance is at most that of `last` (so ties with it stay too).
    int last = 0;
    double cum = 0;
    for (int i = 0; i < n; ++i) {
        cum += order[i].second.first / d.total;
        if (cum < mass) last = i + 1;
    }
    last = std::min(last, n - 1);
    int keep = 0;
    while (keep < n && order[keep].first <= order[last].first) ++keep;
    for (int i = 0; i < n; ++i) cand[i] = order[i].second;
    return std::max(keep, 1);
}

int eta_filter(std::vector<Candidate>& cand, int n, double eta) {
    const Dist d = distribution(cand, n);
    const double cut = std::min(eta, std::sqrt(eta) * std::exp(-d.entropy));
    float top = cand[0].first;
    for (int i = 1; i < n; ++i) top = std::max(top, cand[i].first);
    // transformers removes p < cut only below the top score: the most likely always stays.
    int keep = 0;
    for (int i = 0; i < n; ++i)
        if (cand[i].first / d.total >= cut || cand[i].first >= top)
            std::swap(cand[keep++], cand[i]);
    return keep;
}

}  // namespace meshlm

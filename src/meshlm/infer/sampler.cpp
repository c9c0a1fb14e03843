#include "meshlm/infer/sampler.h"

#include <algorithm>
#include <cmath>

#include "meshlm/core/error.h"

namespace meshlm {

void apply_repetition_penalty(float* logits, const std::vector<std::int32_t>& seen, float penalty) {
    if (penalty == 1.f) return;
    for (std::int32_t id : seen) {
        float& z = logits[id];
        z = z > 0.f ? z / penalty : z * penalty;
    }
}

namespace {

// Descending by logit, ties by id: the order top-k and top-p filter in, so filtering is
// deterministic.
// (A function object, so the sorts inline it.)
constexpr auto by_logit = [](const std::pair<float, std::int32_t>& a,
                             const std::pair<float, std::int32_t>& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
};

// The entry of w[0..n) that u (in [0, total)) falls in, walking in order.
template <typename Weight>
int draw(int n, double u, Weight w) {
    double acc = 0;
    for (int i = 0; i < n; ++i) {
        acc += w(i);
        if (u < acc) return i;
    }
    return n - 1;  // u within rounding of the total
}

}  // namespace

std::int32_t sample_token(const float* logits, int V, const SamplingOptions& opt, Philox& rng,
                          std::vector<std::pair<float, std::int32_t>>& scratch) {
    if (opt.temperature <= 0.f)
        return static_cast<std::int32_t>(std::max_element(logits, logits + V) - logits);
    scratch.resize(V);
    float mx = -INFINITY;
    for (int v = 0; v < V; ++v) {
        scratch[v] = {logits[v] / opt.temperature, v};
        mx = std::max(mx, scratch[v].first);
    }
    const bool top_k = opt.top_k > 0 && opt.top_k < V;
    if (!top_k && opt.top_p >= 1.f) {
        // Plain temperature: no order is needed, so none is made (a sort of the vocabulary
        // cost more than the model's step at V ~ 50k). Draws walk the ids in order.
        double total = 0;
        for (auto& e : scratch) total += (e.first = std::exp(e.first - mx));
        const double u = rng.uniform_double() * total;
        return scratch[draw(V, u, [&](int i) { return scratch[i].first; })].second;
    }
    // The candidates, first in the set: the top k in descending order, or the top-p set.
    int keep = top_k ? opt.top_k : V;
    double total = 0;
    if (top_k) {
        std::partial_sort(scratch.begin(), scratch.begin() + keep, scratch.end(), by_logit);
        for (int i = 0; i < keep; ++i)
            total += (scratch[i].first = std::exp(scratch[i].first - mx));
    } else {
        // Top-p alone needs the smallest set of most likely tokens holding p of the mass, not
        // its order: a quickselect on mass. [0, lo) is known to be in the set (mass `in`),
        // [hi, V) out, [lo, hi) undecided and unordered. The first cut is at 256 (a trained
        // model's nucleus is often smaller), then halves; the last few hundred are sorted.
        thread_local std::vector<float> w;  // w[id] = exp(logit - max)
        w.resize(V);
        for (const auto& e : scratch) total += (w[e.second] = std::exp(e.first - mx));
        const double target = opt.top_p * total;
        int lo = 0, hi = V;
        double in = 0;
        for (int cut = std::min(V, 256); hi - lo > 256; cut = lo + (hi - lo) / 2) {
            std::nth_element(scratch.begin() + lo, scratch.begin() + cut, scratch.begin() + hi,
                             by_logit);
            double upper = 0;  // the mass of [lo, cut)
            for (int i = lo; i < cut; ++i) upper += w[scratch[i].second];
            if (in + upper >= target) {
                hi = cut;
            } else {
                in += upper, lo = cut;
            }
        }
        std::sort(scratch.begin() + lo, scratch.begin() + hi, by_logit);
        keep = lo;
        for (double cum = in; keep < hi && cum < target;) cum += w[scratch[keep++].second];
        total = 0;
        for (int i = 0; i < keep; ++i) total += (scratch[i].first = w[scratch[i].second]);
    }
    if (top_k && opt.top_p < 1.f) {
        double cum = 0;
        for (int i = 0; i < keep; ++i) {
            cum += scratch[i].first;
            if (cum >= opt.top_p * total) {
                keep = i + 1;
                break;
            }
        }
        total = 0;
        for (int i = 0; i < keep; ++i) total += scratch[i].first;
    }
    const double u = rng.uniform_double() * total;
    return scratch[draw(keep, u, [&](int i) { return scratch[i].first; })].second;
}

}  // namespace meshlm

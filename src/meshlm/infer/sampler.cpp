#include "meshlm/infer/sampler.h"

#include <algorithm>
#include <cmath>

#include "meshlm/core/error.h"
#include "meshlm/infer/sampler_filters.h"

namespace meshlm {

void apply_repetition_penalty(float* logits, const std::vector<std::int32_t>& seen, float penalty) {
    if (penalty == 1.f) return;
    for (std::int32_t id : seen) {
        float& z = logits[id];
        z = z > 0.f ? z / penalty : z * penalty;
    }
}

namespace {

using Weighted = std::pair<float, std::int32_t>;  // (probability up to a common factor, id)

// Descending by weight, ties by id: the order top-k and top-p filter in, so filtering is
// deterministic. A function object, so the sorts inline it.
constexpr auto by_weight = [](const Weighted& a, const Weighted& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
};

// How many of the most likely of w[0..n) make the smallest set holding `target` of the weight;
// leaves them first, in descending order from the last few hundred on. Only the set is needed,
// not its order: a quickselect on weight. [0, lo) is known to be in (weight `in`), [hi, n) out,
// [lo, hi) undecided and unordered. The first cut is at 256 (a trained model's nucleus is often
// smaller), then halves.
int nucleus(std::vector<Weighted>& w, int n, double target) {
    int lo = 0, hi = n;
    double in = 0;
    for (int cut = std::min(n, 256); hi - lo > 256; cut = lo + (hi - lo) / 2) {
        std::nth_element(w.begin() + lo, w.begin() + cut, w.begin() + hi, by_weight);
        double upper = 0;  // the weight of [lo, cut)
        for (int i = lo; i < cut; ++i) upper += w[i].first;
        if (in + upper >= target) {
            hi = cut;
        } else {
            in += upper, lo = cut;
        }
    }
    std::sort(w.begin() + lo, w.begin() + hi, by_weight);
    int keep = lo;
    for (double cum = in; keep < hi && cum < target;) cum += w[keep++].first;
    return keep;
}

}  // namespace

int sampling_candidates(const float* logits, int V, const SamplingOptions& opt,
                        std::vector<std::pair<float, std::int32_t>>& scratch) {
    scratch.resize(V);
    float mx = -INFINITY;
    for (int v = 0; v < V; ++v) {
        scratch[v] = {logits[v] / opt.temperature, v};
        mx = std::max(mx, scratch[v].first);
    }
    // The candidates are scratch[0..keep), weighted exp(z - max). Top-k orders the scaled logits
    // (exp keeps their order) and weighs only the k; plain temperature needs no order, so none
    // is made (a sort of the vocabulary cost more than the model's step at V ~ 50k).
    int keep = V;
    if (opt.top_k > 0 && opt.top_k < V) {
        keep = opt.top_k;
        std::partial_sort(scratch.begin(), scratch.begin() + keep, scratch.end(), by_weight);
    }
    double total = 0;
    for (int i = 0; i < keep; ++i) total += (scratch[i].first = std::exp(scratch[i].first - mx));
    if (opt.top_p < 1.f) keep = nucleus(scratch, keep, opt.top_p * total);
    if (opt.typical_p < 1.f) keep = typical_filter(scratch, keep, opt.typical_p);
    if (opt.eta_cutoff > 0.f) keep = eta_filter(scratch, keep, opt.eta_cutoff);
    return keep;
}

std::int32_t sample_token(const float* logits, int V, const SamplingOptions& opt, Philox& rng,
                          std::vector<std::pair<float, std::int32_t>>& scratch) {
    if (opt.temperature <= 0.f)
        return static_cast<std::int32_t>(std::max_element(logits, logits + V) - logits);
    const int keep = sampling_candidates(logits, V, opt, scratch);
    double total = 0;
    for (int i = 0; i < keep; ++i) total += scratch[i].first;
    const double u = rng.uniform_double() * total;
    double acc = 0;
    for (int i = 0; i < keep; ++i) {
        acc += scratch[i].first;
        if (u < acc) return scratch[i].second;
    }
    return scratch[keep - 1].second;  // u within rounding of the total
}

}  // namespace meshlm

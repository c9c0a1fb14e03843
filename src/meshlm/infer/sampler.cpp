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

std::int32_t sample_token(const float* logits, int V, const SamplingOptions& opt, Philox& rng,
                          std::vector<std::pair<float, std::int32_t>>& scratch) {
    if (opt.temperature <= 0.f)
        return static_cast<std::int32_t>(std::max_element(logits, logits + V) - logits);
    scratch.resize(V);
    for (int v = 0; v < V; ++v) scratch[v] = {logits[v] / opt.temperature, v};
    // Descending by logit, ties by id, so filtering is deterministic.
    auto by_logit = [](const auto& a, const auto& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
    };
    int keep = V;
    if (opt.top_k > 0 && opt.top_k < V) {
        keep = opt.top_k;
        std::partial_sort(scratch.begin(), scratch.begin() + keep, scratch.end(), by_logit);
    } else {
        std::sort(scratch.begin(), scratch.end(), by_logit);
    }
    const float mx = scratch[0].first;
    double total = 0;
    for (int i = 0; i < keep; ++i) total += (scratch[i].first = std::exp(scratch[i].first - mx));
    if (opt.top_p < 1.f) {
        double cum = 0;
        for (int i = 0; i < keep; ++i) {
            cum += scratch[i].first / total;
            if (cum >= opt.top_p) {
                keep = i + 1;
                break;
            }
        }
        total = 0;
        for (int i = 0; i < keep; ++i) total += scratch[i].first;
    }
    double u = rng.uniform_double() * total, acc = 0;
    for (int i = 0; i < keep; ++i) {
        acc += scratch[i].first;
        if (u < acc) return scratch[i].second;
    }
    return scratch[keep - 1].second;
}

}  // namespace meshlm

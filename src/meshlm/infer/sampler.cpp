#include "meshlm/infer/sampler.h"

#include <algorithm>
#include <cmath>

#include "meshlm/core/error.h"

namespace meshlm {

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

std::vector<std::int32_t> generate(GPT2& model, const float* params,
                                   const std::vector<std::int32_t>& prompt, std::int32_t eot_id,
                                   const SamplingOptions& opt,
                                   const std::function<void(std::int32_t)>& on_token) {
    const int ctx = model.config().max_seq_len, V = model.config().vocab_size;
    std::vector<std::int32_t> seq = prompt;
    if (seq.empty()) seq.push_back(eot_id);  // an empty prompt starts a fresh document
    std::vector<std::int32_t> out;
    std::vector<std::pair<float, std::int32_t>> scratch;
    Philox rng(opt.seed, 0x5A3913);
    for (int i = 0; i < opt.max_new_tokens; ++i) {
        const int T = std::min<int>(static_cast<int>(seq.size()), ctx);
        const std::int32_t* window = seq.data() + seq.size() - T;
        model.forward(params, window, nullptr, 1, T);
        std::int32_t next = sample_token(model.logits() + static_cast<std::size_t>(T - 1) * V, V,
                                         opt, rng, scratch);
        if (opt.stop_at_eot && next == eot_id) break;
        seq.push_back(next);
        out.push_back(next);
        if (on_token) on_token(next);
    }
    return out;
}

}  // namespace meshlm

#include "meshlm/infer/generate.h"

#include <algorithm>

#include "meshlm/core/error.h"

namespace meshlm {
namespace {
constexpr std::uint64_t kSampleStream = 0x5A3913;  // RNG stream of sample 0; sample i: + i
}

std::vector<SampleOutput> generate_samples(Decoder& decoder, const float* params,
                                           const std::vector<std::int32_t>& prompt,
                                           std::int32_t eot_id, const SamplingOptions& opt,
                                           const TokenCallback& on_token) {
    const int S = decoder.num_seqs(), ctx = decoder.max_seq(), V = decoder.config().vocab_size;
    MESHLM_CHECK(opt.repetition_penalty > 0.f, "repetition penalty must be > 0");
    std::vector<std::int32_t> start = prompt.empty() ? std::vector<std::int32_t>{eot_id} : prompt;
    for (std::int32_t id : start)
        MESHLM_CHECK(id >= 0 && id < V, "prompt token ", id, " outside [0, ", V, ")");

    std::vector<SampleOutput> out(S);
    if (opt.max_new_tokens <= 0) return out;
    // Per sample: the tokens in its context window (for sliding), the ids seen so far.
    const std::size_t keep0 = std::min<std::size_t>(start.size(), ctx);
    std::vector<std::vector<std::int32_t>> window(
        S, std::vector<std::int32_t>(start.end() - keep0, start.end()));
    std::vector<std::vector<std::int32_t>> seen(S);
    std::vector<std::vector<char>> is_seen(S, std::vector<char>(V, 0));
    for (int s = 0; s < S; ++s)
        for (std::int32_t id : start)
            if (!is_seen[s][id]) is_seen[s][id] = 1, seen[s].push_back(id);
    std::vector<Philox> rng;
    for (int s = 0; s < S; ++s) rng.emplace_back(opt.seed, kSampleStream + s);
    std::vector<std::pair<float, std::int32_t>> scratch;
    std::vector<std::int32_t> next(S);

    std::vector<float> row(V);  // one sample's logits, penalized in place
    const float* logits = decoder.prefill(params, window[0].data(), static_cast<int>(keep0), 1);
    int active = S;
    while (active > 0) {
        for (int s = 0; s < S; ++s) {
            if (out[s].reason != StopReason::max_tokens || next[s] < 0) {
                next[s] = -1;
                continue;
            }
            std::copy_n(logits + static_cast<std::size_t>(s) * V, V, row.data());
            apply_repetition_penalty(row.data(), seen[s], opt.repetition_penalty);
            const std::int32_t tok = sample_token(row.data(), V, opt, rng[s], scratch);
            next[s] = -1;
            --active;  // re-counted below if the sample goes on
            if (opt.stop_at_eot && tok == eot_id) {
                out[s].reason = StopReason::eot;
                continue;
            }
            out[s].tokens.push_back(tok);
            window[s].push_back(tok);
            if (!is_seen[s][tok]) is_seen[s][tok] = 1, seen[s].push_back(tok);
            if (on_token && !on_token(s, tok)) {
                out[s].reason = StopReason::callback;
                continue;
            }
            if (static_cast<int>(out[s].tokens.size()) >= opt.max_new_tokens) continue;
            next[s] = tok;
            ++active;
        }
        if (active == 0) break;
        if (decoder.position() < ctx) {
            logits = decoder.step(params, next.data());
            continue;
        }
        // The context is full: rebuild the cache from the last half of each window. Finished
        // samples get a dummy row (their logits are never read again).
        const int keep = std::max(1, ctx / 2);
        std::vector<std::int32_t> rows(static_cast<std::size_t>(S) * keep, eot_id);
        for (int s = 0; s < S; ++s) {
            if (next[s] < 0) continue;
            window[s].erase(window[s].begin(), window[s].end() - keep);
            std::copy(window[s].begin(), window[s].end(),
                      rows.begin() + static_cast<long>(s) * keep);
        }
        logits = decoder.prefill(params, rows.data(), keep, S);
    }
    return out;
}

std::vector<std::int32_t> generate(const ModelConfig& model, const float* params,
                                   const std::vector<std::int32_t>& prompt, std::int32_t eot_id,
                                   const SamplingOptions& opt,
                                   const std::function<void(std::int32_t)>& on_token) {
    Decoder decoder(model, 1);
    TokenCallback cb;
    if (on_token) cb = [&](int, std::int32_t id) { return on_token(id), true; };
    return generate_samples(decoder, params, prompt, eot_id, opt, cb)[0].tokens;
}

}  // namespace meshlm

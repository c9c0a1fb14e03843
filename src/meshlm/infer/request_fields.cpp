#include "meshlm/infer/request_fields.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

namespace meshlm {

namespace {

// OpenAI's fields that meshlm reads (or accepts and ignores: model, user, logit_bias) and
// meshlm's sampling extensions (vLLM's names).
constexpr std::array kShared = {
    "model",
    "max_tokens",
    "temperature",
    "top_p",
    "n",
    "stream",
    "stream_options",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "user",
    "logit_bias",
    "top_k",
    "typical_p",
    "eta_cutoff",
    "ignore_eos",
    "repetition_penalty",
    "truncate_prompt_tokens",
};
// `echo`, `suffix`, `best_of` and `prompt` are known to chat too: it refuses them with its own
// message (they are completions parameters).
constexpr std::array kCompletion = {"prompt", "echo", "logprobs", "suffix", "best_of"};
constexpr std::array kChat = {
    "messages", "max_completion_tokens", "logprobs", "top_logprobs", "echo", "suffix", "best_of",
    "prompt"};

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diag = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
            diag = up;
        }
    }
    return row[b.size()];
}

}  // namespace

std::optional<UnknownField> find_unknown_field(const nlohmann::json& body, bool chat) {
    std::vector<std::string_view> known(kShared.begin(), kShared.end());
    if (chat)
        known.insert(known.end(), kChat.begin(), kChat.end());
    else
        known.insert(known.end(), kCompletion.begin(), kCompletion.end());
    for (const auto& [key, value] : body.items()) {
        if (std::find(known.begin(), known.end(), key) != known.end()) continue;
        UnknownField u{key, "Unrecognized request argument supplied: " + key};
        // A near miss (a typo) is named: at most a third of the letters differ.
        std::string_view best;
        std::size_t best_d = key.size() / 3 + 1;
        for (std::string_view k : known) {
            // The distance is at least the difference in length: a long key (a fuzzed 4 kB
            // one) skips the table.
            if (std::max(key.size(), k.size()) - std::min(key.size(), k.size()) >= best_d) continue;
            if (const std::size_t d = edit_distance(key, k); d < best_d) best = k, best_d = d;
        }
        if (!best.empty()) u.message += " (did you mean '" + std::string(best) + "'?)";
        return u;
    }
    return std::nullopt;
}

}  // namespace meshlm

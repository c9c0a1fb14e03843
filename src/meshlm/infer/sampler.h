// Next-token sampling from logits: an optional repetition penalty, then greedy (temperature 0)
// or a temperature-scaled softmax restricted by top-k, top-p (nucleus), typical-p and eta, in
// that order (transformers' logits processors), drawn with a counter-based RNG.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "meshlm/core/rng.h"
#include "meshlm/model/model_config.h"

namespace meshlm {

struct SamplingOptions {
    float temperature = 0.8f;        // 0 = greedy
    int top_k = 0;                   // 0 = no limit
    float top_p = 1.f;               // 1 = no limit
    float typical_p = 1.f;           // typical sampling's mass; 1 = off (sampler_filters.h)
    float eta_cutoff = 0.f;          // eta-sampling's eta; 0 = off
    float repetition_penalty = 1.f;  // 1 = none (HF semantics, see apply_repetition_penalty)
    int max_new_tokens = 200;
    std::uint64_t seed = 0;
    bool stop_at_eot = true;
};

// Hugging Face's repetition penalty: for every id in `seen` (each once), a logit > 0 is divided
// by `penalty`, any other multiplied by it.
void apply_repetition_penalty(float* logits, const std::vector<std::int32_t>& seen, float penalty);

// The distribution sample_token draws from (temperature > 0): fills scratch[0..n) with (weight,
// id) pairs, the weights proportional to the probabilities, and returns n. `scratch` is resized
// once to V and reused.
int sampling_candidates(const float* logits, int V, const SamplingOptions& opt,
                        std::vector<std::pair<float, std::int32_t>>& scratch);

// Picks a token from logits[V]. `scratch` is resized once to V and reused.
std::int32_t sample_token(const float* logits, int V, const SamplingOptions& opt, Philox& rng,
                          std::vector<std::pair<float, std::int32_t>>& scratch);

// One sample continuing `prompt` (an empty prompt starts a new document: [eot_id]), calling
// on_token for each new token; stops after max_new_tokens or at eot_id when stop_at_eot.
// Returns the new ids. Runs over the KV cache (infer/generate.h).
std::vector<std::int32_t> generate(const ModelConfig& model, const float* params,
                                   const std::vector<std::int32_t>& prompt, std::int32_t eot_id,
                                   const SamplingOptions& opt,
                                   const std::function<void(std::int32_t)>& on_token = {});

}  // namespace meshlm

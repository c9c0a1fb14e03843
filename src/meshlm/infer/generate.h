// Generation over the KV cache: S samples of one prompt decoded together as a batch.
//
// Each sample i draws from its own RNG stream, keyed by (seed, i), and the decoder computes a
// sequence's logits bitwise independently of the others, so sample i is the same whether 1 or
// N samples are run. When a sequence fills the model's context (max_seq_len positions), the
// window slides: the cache is rebuilt in one pass from the last half of the context (positions
// restart at 0) and decoding goes on, so max_new_tokens is honoured at any prompt length.
// Prompts longer than the context keep their last max_seq_len tokens.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "meshlm/infer/sampler.h"
#include "meshlm/model/decoder.h"

namespace meshlm {

enum class StopReason { max_tokens, eot, callback };

struct SampleOutput {
    std::vector<std::int32_t> tokens;  // new tokens (not the prompt, not the end-of-text)
    StopReason reason = StopReason::max_tokens;
};

// Called for each new token of sample i, in order per sample (samples interleave step by step).
// Returning false ends that sample after this token (e.g. a stop string was seen).
using TokenCallback = std::function<bool(int sample, std::int32_t token)>;

// Continues `prompt` with decoder.num_seqs() samples; an empty prompt starts a new document
// ([eot_id]). Repetition penalty counts the prompt and the sample's own tokens.
std::vector<SampleOutput> generate_samples(Decoder& decoder, const float* params,
                                           const std::vector<std::int32_t>& prompt,
                                           std::int32_t eot_id, const SamplingOptions& opt,
                                           const TokenCallback& on_token = {});

}  // namespace meshlm

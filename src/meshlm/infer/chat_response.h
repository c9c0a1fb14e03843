// The OpenAI shapes of a chat completion's answer (/v1/chat/completions): a whole choice
// ({"message": {"role": "assistant", "content"}}), a streamed choice ({"delta": ...}), and chat
// logprobs ({"content": [{token, logprob, bytes, top_logprobs}]}); and the name logprobs give a
// token, which /v1/completions shares.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "meshlm/data/tokenizer.h"
#include "meshlm/infer/engine.h"

namespace meshlm {

// A token as logprobs name it: its text, or (OpenAI's convention) "bytes:\\xNN..." when its
// bytes are not valid UTF-8 on their own (part of a character); the end-of-text token, which
// decodes to nothing, is "<|endoftext|>".
std::string logprob_token(const Tokenizer& tok, std::int32_t id);

// Chat logprobs of c's tokens from `from` on: token, logprob, bytes (0..255) and top_logprobs
// (the same three for each of the top tokens).
nlohmann::json chat_logprobs(const Tokenizer& tok, const ChoiceResult& c, std::size_t from);

// Choice `index` of a whole answer; logprobs null unless `logprobs`.
nlohmann::json chat_choice(const Tokenizer& tok, const ChoiceResult& c, std::size_t index,
                           bool logprobs);

// A streamed choice: the text from byte `text_from` and the tokens from `tokens_from` on, the
// role with the choice's first delta. The caller adds finish_reason.
nlohmann::json chat_delta_choice(const Tokenizer& tok, const ChoiceResult& c, std::size_t index,
                                 std::size_t text_from, std::size_t tokens_from, bool first,
                                 bool logprobs);

}  // namespace meshlm

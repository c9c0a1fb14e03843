// The chat side of the server: an OpenAI chat request's `messages`, checked and rendered into
// the prompt by the model's chat template (add_generation_prompt on), and the stop tokens a
// chat ends at.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "meshlm/data/chat_template.h"
#include "meshlm/data/tokenizer.h"

namespace meshlm {

// What `serve` chats with: the template, and where an assistant turn ends -- tokens when the
// end-of-turn text is one token of the vocabulary (<|im_end|>, <|eot_id|>, generation_config's
// eos_token_id), stop strings when it is not (the fallback template on a byte-level model).
struct ChatSetup {
    std::shared_ptr<const ChatTemplate> tmpl;
    std::string source;  // where the template came from, for the startup line
    std::vector<std::int32_t> stop_ids;
    std::vector<std::string> stop_strings;
};

// The chat setup for a model: the tokenizer_config.json of `dirs` (the first that has one, else
// ChatTemplate::fallback()) and the eos_token_id (a number or a list) of the first
// generation_config.json found there.
ChatSetup load_chat_setup(const std::vector<std::string>& dirs, const Tokenizer& tok);

// `messages` rendered: a non-empty list of {"role": system|developer|user|assistant|tool,
// "content": a string, a list of {"type": "text", "text": ...} parts, or null beside
// tool_calls}. Throws ApiError (400, param "messages") naming the message and field at fault,
// or carrying the template's own refusal (raise_exception).
std::string render_chat_prompt(const jinja::Json& messages, const ChatTemplate& tmpl);

}  // namespace meshlm

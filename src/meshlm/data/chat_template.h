// Chat templates: the Jinja template in a Hugging Face tokenizer_config.json that turns a list of
// messages into the prompt text, rendered byte for byte as transformers' apply_chat_template
// does (jinja2 with trim_blocks, lstrip_blocks, raise_exception, strftime_now and a tojson that
// keeps non-ASCII text).
//
// There is no Jinja library for C++ in Debian (the project takes its dependencies from Debian
// packages), so the subset chat templates use is written here, under data/jinja/: for / if /
// elif / else / set (namespace() included), loop.*, break / continue, filters (trim, tojson,
// length, selectattr, map, join, default, ...), tests (defined, none, string, ...), string and
// dict methods (.strip(), .startswith(), .split(), .items(), ...), slicing, whitespace control.
// Anything else (macros, call blocks, includes, ...) is refused when the template is parsed,
// naming the construct and its line and column.
//
// It lives in data/ (not infer/) so preparing a chat corpus can render it too.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "meshlm/data/jinja/value.h"

namespace meshlm {

using ChatTemplateError = jinja::TemplateError;

class ChatTemplate {
  public:
    // Parses `source`; `vars` are the variables every rendering sees besides the messages
    // (bos_token, eos_token, ...). Throws ChatTemplateError naming what is not supported.
    ChatTemplate(std::string source, jinja::Json vars = jinja::Json::object());
    ~ChatTemplate();
    ChatTemplate(ChatTemplate&&) noexcept;
    ChatTemplate& operator=(ChatTemplate&&) noexcept;

    // The template and special tokens of a tokenizer_config.json ("chat_template" a string, or a
    // list of {name, template} whose "default" is used). Throws InvalidInput when it has none.
    static ChatTemplate from_tokenizer_config(const std::string& path);
    // For models without a tokenizer_config.json (byte-level meshlm models): ChatML,
    // "<|im_start|>ROLE\nCONTENT<|im_end|>\n" per message, then "<|im_start|>assistant\n".
    static ChatTemplate fallback();
    static const char* fallback_source();

    // The prompt for `messages` (a list of {"role", "content", ...}); `extra` adds variables
    // (transformers' apply_chat_template keyword arguments). Throws ChatTemplateError, with
    // the template's own message when it calls raise_exception.
    std::string apply(const jinja::Json& messages, bool add_generation_prompt,
                      const jinja::Json& extra = jinja::Json::object()) const;

    // What ends an assistant turn: the text the template writes right after an assistant
    // message's content (e.g. "<|im_end|>", "<|eot_id|>", "</s>"), and eos_token. Generation
    // stops at these.
    std::vector<std::string> end_of_turn() const;
    const std::string& source() const { return source_; }
    const jinja::Json& vars() const { return vars_; }

  private:
    struct Parsed;
    std::string source_;
    jinja::Json vars_;
    std::unique_ptr<Parsed> parsed_;
};

// transformers' special tokens of a tokenizer_config.json: bos_token, eos_token, unk_token,
// pad_token (strings, or AddedToken objects with a "content"), the ones that are set.
jinja::Json special_tokens_of(const jinja::Json& tokenizer_config);

}  // namespace meshlm

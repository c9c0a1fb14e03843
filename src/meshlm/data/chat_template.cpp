#include "meshlm/data/chat_template.h"

#include <fstream>
#include <sstream>

#include "meshlm/core/error.h"
#include "meshlm/data/jinja/lexer.h"
#include "meshlm/data/jinja/parser.h"
#include "meshlm/data/jinja/render.h"

namespace meshlm {

using jinja::Json;

struct ChatTemplate::Parsed {
    jinja::Lexed lexed;
    jinja::Body body;
};

ChatTemplate::ChatTemplate(std::string source, Json vars)
    : source_(std::move(source)), vars_(std::move(vars)), parsed_(std::make_unique<Parsed>()) {
    parsed_->lexed = jinja::lex(source_);
    parsed_->body = jinja::parse(parsed_->lexed);
}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

const char* ChatTemplate::fallback_source() {
    return "{% for message in messages %}"
           "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
           "{% endfor %}"
           "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
}

ChatTemplate ChatTemplate::fallback() {
    return ChatTemplate(fallback_source());
}

Json special_tokens_of(const Json& config) {
    Json out = Json::object();
    for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
        auto it = config.find(key);
        if (it == config.end() || it->is_null()) continue;
        if (it->is_string())
            out[key] = *it;
        else if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
            out[key] = (*it)["content"];
    }
    return out;
}

ChatTemplate ChatTemplate::from_tokenizer_config(const std::string& path) {
    std::ifstream in(path);
    if (!in) MESHLM_INVALID("cannot read ", path);
    std::stringstream ss;
    ss << in.rdbuf();
    Json config;
    try {
        config = Json::parse(ss.str());
    } catch (const std::exception& e) {
        MESHLM_INVALID(path, ": not valid JSON: ", e.what());
    }
    auto it = config.find("chat_template");
    if (it == config.end() || it->is_null()) MESHLM_INVALID(path, " has no chat_template");
    std::string source;
    if (it->is_string()) {
        source = it->get<std::string>();
    } else if (it->is_array()) {  // named templates: transformers uses "default"
        for (const Json& t : *it)
            if (t.value("name", "") == "default") source = t.value("template", "");
        if (source.empty()) MESHLM_INVALID(path, ": chat_template lists no \"default\" template");
    } else {
        MESHLM_INVALID(path, ": chat_template must be a string or a list of named templates");
    }
    try {
        return ChatTemplate(std::move(source), special_tokens_of(config));
    } catch (const ChatTemplateError& e) {
        MESHLM_INVALID(path, ": ", e.what());
    }
}

std::string ChatTemplate::apply(const Json& messages, bool add_generation_prompt,
                                const Json& extra) const {
    // transformers passes tools and documents (None when not given), the special tokens and the
    // caller's keyword arguments.
    Json ctx = vars_;
    ctx["tools"] = nullptr;
    ctx["documents"] = nullptr;
    for (auto it = extra.begin(); it != extra.end(); ++it) ctx[it.key()] = it.value();
    ctx["messages"] = messages;
    ctx["add_generation_prompt"] = add_generation_prompt;
    return jinja::render(parsed_->body, parsed_->lexed.source, ctx);
}

std::vector<std::string> ChatTemplate::end_of_turn() const {
    std::vector<std::string> out;
    // The text that follows an assistant message, up to the end of its line.
    const std::string mark = "MESHLMENDOFTURNPROBE";
    try {
        const Json msgs = Json::array({Json{{"role", "user"}, {"content", "hi"}},
                                       Json{{"role", "assistant"}, {"content", mark}}});
        const std::string text = apply(msgs, false);
        const std::size_t at = text.rfind(mark);
        if (at != std::string::npos) {
            std::string after = text.substr(at + mark.size());
            after = after.substr(0, after.find('\n'));
            after = jinja::py_strip(after, true, true);
            if (!after.empty()) out.push_back(after);
        }
    } catch (const ChatTemplateError&) {
        // A template that refuses this probe still stops at eos_token.
    }
    if (vars_.contains("eos_token")) {
        const std::string eos = vars_["eos_token"].get<std::string>();
        if (!eos.empty() && (out.empty() || out[0] != eos)) out.push_back(eos);
    }
    return out;
}

}  // namespace meshlm

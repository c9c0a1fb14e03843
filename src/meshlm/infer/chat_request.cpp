#include "meshlm/infer/chat_request.h"

#include <filesystem>
#include <fstream>
#include <set>

#include "meshlm/infer/server.h"

namespace meshlm {

using jinja::Json;

namespace {
[[noreturn]] void bad_message(const std::string& message) {
    throw ApiError{400, message, "messages"};
}

// A message's content as the template sees it: text parts joined into one string (the
// families' templates concatenate content as a string).
Json content_of(const Json& m, std::size_t i) {
    const std::string at = "messages[" + std::to_string(i) + "].content";
    auto c = m.find("content");
    if (c == m.end() || c->is_null()) {
        if (m.contains("tool_calls")) return nullptr;
        bad_message(at + " is required");
    }
    if (c->is_string()) return *c;
    if (!c->is_array()) bad_message(at + " must be a string or a list of content parts");
    std::string text;
    for (const Json& part : *c) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
            !part["text"].is_string())
            bad_message(at + ": only {\"type\": \"text\", \"text\": ...} parts are supported");
        text += part["text"].get<std::string>();
    }
    return text;
}

std::vector<std::int32_t> eos_ids_of(const std::string& path) {
    std::vector<std::int32_t> ids;
    std::ifstream in(path);
    if (!in) return ids;
    Json g = Json::parse(in, nullptr, false);
    if (g.is_discarded() || !g.contains("eos_token_id")) return ids;
    const Json& e = g["eos_token_id"];
    if (e.is_number_integer()) ids.push_back(e.get<std::int32_t>());
    if (e.is_array())
        for (const Json& v : e)
            if (v.is_number_integer()) ids.push_back(v.get<std::int32_t>());
    return ids;
}
}  // namespace

std::string render_chat_prompt(const Json& messages, const ChatTemplate& tmpl) {
    static const std::set<std::string> kRoles = {"system", "developer", "user", "assistant",
                                                 "tool"};
    if (!messages.is_array() || messages.empty())
        bad_message("'messages' must be a non-empty list of messages");
    Json msgs = Json::array();
    for (std::size_t i = 0; i < messages.size(); ++i) {
        const Json& m = messages[i];
        const std::string at = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) bad_message(at + " must be an object");
        auto role = m.find("role");
        if (role == m.end() || !role->is_string()) bad_message(at + ".role is required (a string)");
        if (!kRoles.count(role->get<std::string>()))
            bad_message(at +
                        ".role must be one of system, developer, user, assistant, tool; got '" +
                        role->get<std::string>() + "'");
        Json copy = m;
        copy["content"] = content_of(m, i);
        msgs.push_back(std::move(copy));
    }
    try {
        return tmpl.apply(msgs, true);
    } catch (const ChatTemplateError& e) {
        throw ApiError{
            400, std::string("the model's chat template refused the conversation: ") + e.what(),
            "messages"};
    }
}

ChatSetup load_chat_setup(const std::vector<std::string>& dirs, const Tokenizer& tok) {
    ChatSetup s;
    std::vector<std::int32_t> eos;
    for (const std::string& d : dirs) {
        const std::string cfg = d + "/tokenizer_config.json";
        if (!s.tmpl && std::filesystem::exists(cfg)) {
            std::ifstream in(cfg);
            const Json j = Json::parse(in, nullptr, false);
            if (!j.is_discarded() && j.contains("chat_template") && !j["chat_template"].is_null()) {
                s.tmpl = std::make_shared<ChatTemplate>(ChatTemplate::from_tokenizer_config(cfg));
                s.source = cfg;
            }
        }
        if (eos.empty()) eos = eos_ids_of(d + "/generation_config.json");
    }
    if (!s.tmpl) {
        s.tmpl = std::make_shared<ChatTemplate>(ChatTemplate::fallback());
        s.source = "the default (ChatML) template";
    }
    for (const std::int32_t id : eos)
        if (id >= 0 && id < tok.vocab_size()) s.stop_ids.push_back(id);
    // An end-of-turn text that is one token stops as that token; otherwise as a stop string.
    for (const std::string& text : s.tmpl->end_of_turn()) {
        const std::vector<std::int32_t> ids = tok.encode(text);
        if (ids.size() == 1)
            s.stop_ids.push_back(ids[0]);
        else
            s.stop_strings.push_back(text);
    }
    return s;
}

}  // namespace meshlm

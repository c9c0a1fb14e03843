#include "meshlm/infer/chat_response.h"

#include <cstdio>

namespace meshlm {

using json = nlohmann::json;

namespace {
bool valid_utf8(const std::string& s) {
    for (std::size_t i = 0; i < s.size();) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        const int len = c < 0x80         ? 1
                        : (c >> 5) == 6  ? 2
                        : (c >> 4) == 14 ? 3
                        : (c >> 3) == 30 ? 4
                                         : 0;
        if (len == 0 || i + len > s.size()) return false;
        for (int k = 1; k < len; ++k)
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
        i += len;
    }
    return true;
}

json logprob_entry(const Tokenizer& tok, std::int32_t id, float logprob) {
    json bytes = json::array();
    for (const unsigned char b : tok.decode({id})) bytes.push_back(static_cast<int>(b));
    return {{"token", logprob_token(tok, id)}, {"logprob", logprob}, {"bytes", std::move(bytes)}};
}
}  // namespace

std::string logprob_token(const Tokenizer& tok, std::int32_t id) {
    std::string s = tok.decode({id});
    if (s.empty() && id == tok.eot_id()) return "<|endoftext|>";
    if (valid_utf8(s)) return s;
    std::string out = "bytes:";
    char buf[8];
    for (unsigned char c : s) {
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
    }
    return out;
}

json chat_logprobs(const Tokenizer& tok, const ChoiceResult& c, std::size_t from) {
    json content = json::array();
    for (std::size_t i = from; i < c.tokens.size(); ++i) {
        json e = logprob_entry(tok, c.tokens[i].id, c.tokens[i].logprob);
        json top = json::array();
        for (const auto& [id, lp] : c.tokens[i].top) top.push_back(logprob_entry(tok, id, lp));
        e["top_logprobs"] = std::move(top);
        content.push_back(std::move(e));
    }
    return {{"content", std::move(content)}};
}

json chat_choice(const Tokenizer& tok, const ChoiceResult& c, std::size_t index, bool logprobs) {
    return {{"index", index},
            {"message", {{"role", "assistant"}, {"content", c.text}}},
            {"logprobs", logprobs ? chat_logprobs(tok, c, 0) : json(nullptr)},
            {"finish_reason", c.finish_reason}};
}

json chat_delta_choice(const Tokenizer& tok, const ChoiceResult& c, std::size_t index,
                       std::size_t text_from, std::size_t tokens_from, bool first, bool logprobs) {
    json delta = {{"content", c.text.substr(text_from)}};
    if (first) delta["role"] = "assistant";
    return {{"index", index},
            {"delta", std::move(delta)},
            {"logprobs", logprobs ? chat_logprobs(tok, c, tokens_from) : json(nullptr)}};
}

}  // namespace meshlm

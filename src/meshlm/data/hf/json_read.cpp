// tokenizer.json field readers (json_read.h).
#include "meshlm/data/hf/json_read.h"

#include "meshlm/data/hf/regex.h"
#include "meshlm/data/hf/utf8.h"

namespace meshlm::hf {

std::string json_type(const Json& j, const Where& w) {
    if (!j.is_object()) w.fail("expected an object, got ", j.dump());
    auto it = j.find("type");
    if (it == j.end() || !it->is_string()) w.fail("no \"type\" string in ", j.dump());
    return it->get<std::string>();
}

bool json_bool(const Json& j, const char* key, bool dflt, const Where& w) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return dflt;
    if (!it->is_boolean()) w.at(key).fail("expected true or false, got ", it->dump());
    return it->get<bool>();
}

std::string json_string(const Json& j, const char* key, const std::string& dflt, const Where& w) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return dflt;
    if (!it->is_string()) w.at(key).fail("expected a string, got ", it->dump());
    return it->get<std::string>();
}

long long json_int(const Json& j, const char* key, long long dflt, const Where& w) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return dflt;
    if (!it->is_number_integer()) w.at(key).fail("expected an integer, got ", it->dump());
    return it->get<long long>();
}

std::string json_pattern(const Json& j, const char* key, const Where& w) {
    auto it = j.find(key);
    const Where wp = w.at(key);
    if (it == j.end() || !it->is_object() || it->size() != 1)
        wp.fail("expected {\"String\": ...} or {\"Regex\": ...}");
    if (it->contains("String") && (*it)["String"].is_string())
        return regex_escape((*it)["String"].get<std::string>());
    if (it->contains("Regex") && (*it)["Regex"].is_string())
        return (*it)["Regex"].get<std::string>();
    wp.fail("expected {\"String\": ...} or {\"Regex\": ...}, got ", it->dump());
}

char32_t json_char(const Json& j, const char* key, char32_t dflt, const Where& w) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return dflt;
    const std::string s = it->is_string() ? it->get<std::string>() : std::string();
    char32_t c = 0;
    if (s.empty() || next_char(s, 0, c) != s.size() || is_invalid_byte(c))
        w.at(key).fail("expected a one-character string, got ", it->dump());
    return c;
}

}  // namespace meshlm::hf

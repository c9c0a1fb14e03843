// The config.json field readers and mapping helpers the HF families share.
#include <charconv>
#include <cstdlib>
#include <sstream>

#include "meshlm/core/error.h"
#include "meshlm/io/hf_family.h"

namespace meshlm::hf_json {

using nlohmann::json;

namespace {
bool absent(const json& j, const char* key) {
    return !j.contains(key) || j[key].is_null();
}
}  // namespace

int get_int(const json& j, const std::string& where, const char* key, int fallback, int minimum) {
    if (absent(j, key)) return fallback;
    const json& v = j[key];
    if (!v.is_number_integer() || v.get<long long>() < minimum || v.get<long long>() > (1 << 30))
        MESHLM_INVALID(where, ": \"", key, "\" is ", v.dump(),
                       "; expected an integer >= ", minimum);
    return v.get<int>();
}

double get_number(const json& j, const std::string& where, const char* key, double fallback) {
    if (absent(j, key)) return fallback;
    if (!j[key].is_number())
        MESHLM_INVALID(where, ": \"", key, "\" is ", j[key].dump(), "; expected a number");
    return j[key].get<double>();
}

bool get_bool(const json& j, const std::string& where, const char* key, bool fallback) {
    if (absent(j, key)) return fallback;
    if (!j[key].is_boolean())
        MESHLM_INVALID(where, ": \"", key, "\" is ", j[key].dump(), "; expected true or false");
    return j[key].get<bool>();
}

std::string get_string(const json& j, const std::string& where, const char* key,
                       const std::string& fallback) {
    if (absent(j, key)) return fallback;
    if (!j[key].is_string())
        MESHLM_INVALID(where, ": \"", key, "\" is ", j[key].dump(), "; expected a string");
    return j[key].get<std::string>();
}

int get_token_id(const json& j, const char* key) {
    if (!j.contains(key)) return -1;
    const json& v = j[key];
    if (v.is_number_integer()) return v.get<int>();
    if (v.is_array() && !v.empty() && v[0].is_number_integer()) return v[0].get<int>();
    return -1;
}

const char* torch_dtype(DType t) {
    switch (t) {
        case DType::bf16:
            return "bfloat16";
        case DType::f16:
            return "float16";
        default:
            return "float32";
    }
}

double shortest(float f) {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, f);
    *r.ptr = '\0';
    return std::strtod(buf, nullptr);
}

std::string need(const char* key, const std::string& have, const std::string& want) {
    return std::string("model.") + key + " is " + have + " (needs " + want + ")";
}

std::string need(const char* key, bool have, bool want) {
    return need(key, std::string(have ? "true" : "false"), std::string(want ? "true" : "false"));
}

std::string num(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

std::string block_part(const ParamSlice& s) {
    if (s.layer < 0) return "";
    const std::string head = "h." + std::to_string(s.layer) + ".";
    MESHLM_CHECK(s.name.rfind(head, 0) == 0, "block slice ", s.name, " of layer ", s.layer);
    return s.name.substr(head.size());
}

std::vector<std::int64_t> section_rows(const ParamSlice& s) {
    if (s.sections.empty()) return {s.full_shape[0]};
    return s.sections;
}

}  // namespace meshlm::hf_json

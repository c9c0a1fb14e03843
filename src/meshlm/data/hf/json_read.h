// Reading fields of a tokenizer.json component with errors that name the JSON path (Where).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "meshlm/data/hf/pipeline_types.h"

namespace meshlm::hf {

using Json = nlohmann::json;

// The "type" of a component object; fails when j is not an object with a string type.
std::string json_type(const Json& j, const Where& w);
// Optional fields with defaults; a present field of the wrong JSON type fails.
bool json_bool(const Json& j, const char* key, bool dflt, const Where& w);
std::string json_string(const Json& j, const char* key, const std::string& dflt, const Where& w);
long long json_int(const Json& j, const char* key, long long dflt, const Where& w);
// A {"String": s} or {"Regex": r} pattern as a regex source (a String is escaped).
std::string json_pattern(const Json& j, const char* key, const Where& w);
// A one-character string (Metaspace replacement, Strip content) as its code point.
char32_t json_char(const Json& j, const char* key, char32_t dflt, const Where& w);

}  // namespace meshlm::hf

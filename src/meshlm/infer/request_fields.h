// The fields a completion or chat completion request may carry. OpenAI answers a field it does
// not know with 400 naming it; so does meshlm, so that a typo (`max_tokenz`) is not silently
// ignored and answered with the defaults.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace meshlm {

struct UnknownField {
    std::string field;    // the request's key
    std::string message;  // OpenAI's wording, with the closest known field when one is near
};

// The first key of `body` (an object) that /v1/completions (chat false) or
// /v1/chat/completions (chat true) does not know, if any.
std::optional<UnknownField> find_unknown_field(const nlohmann::json& body, bool chat);

}  // namespace meshlm

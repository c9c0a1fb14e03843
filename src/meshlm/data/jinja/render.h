// Runs a parsed template over a context (the variables the caller passes: messages,
// add_generation_prompt, bos_token, ...) and returns the text it prints.
#pragma once

#include <string>

#include "meshlm/data/jinja/ast.h"

namespace meshlm::jinja {

// source: the lexed (normalized) template, for the positions in error messages.
std::string render(const Body& body, const std::string& source, const Json& context);

}  // namespace meshlm::jinja

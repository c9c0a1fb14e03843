// Parses a lexed template into statements (ast.h). Everything outside the subset -- macros,
// call blocks, includes, filters, tests, functions and methods the renderer does not have -- is
// refused here, before anything renders, with the construct's name and position.
#pragma once

#include "meshlm/data/jinja/ast.h"
#include "meshlm/data/jinja/lexer.h"

namespace meshlm::jinja {

Body parse(const Lexed& lexed);

// The names the renderer implements (builtins.cpp): filters, tests, global functions, methods.
bool known_filter(const std::string& name);
bool known_test(const std::string& name);
bool known_function(const std::string& name);
bool known_method(const std::string& name);

}  // namespace meshlm::jinja

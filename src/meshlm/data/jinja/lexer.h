// The Jinja lexer with the settings transformers renders chat templates with: trim_blocks and
// lstrip_blocks on, `{%-` / `-%}` (and `{{-`, `{#-` ...) strip whitespace, `{%+` / `+%}` keep it,
// line endings normalized to \n and one trailing newline dropped (keep_trailing_newline off).
// Whitespace control is applied here, so the parser sees only the text that is printed.
#pragma once

#include <string>
#include <vector>

namespace meshlm::jinja {

enum class Tok { text, expr_begin, stmt_begin, end, name, string, integer, floating, op };

struct Token {
    Tok type;
    std::string s;        // text, name, unescaped string, number or operator
    std::size_t pos = 0;  // byte offset in the (normalized) source
};

struct Lexed {
    std::string source;  // normalized: what positions refer to
    std::vector<Token> tokens;
};

Lexed lex(const std::string& source);

// "line L, column C" of a byte offset (columns count code points from 1).
std::string where(const std::string& source, std::size_t pos);

}  // namespace meshlm::jinja

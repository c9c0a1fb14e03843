// Regular expressions of tokenizer.json (Split pre-tokenizers, Replace normalizers/decoders)
// through PCRE2, compiled with PCRE2_UTF | PCRE2_UCP and JIT. HF tokenizers runs them with
// Oniguruma; PCRE2 has the same backtracking, leftmost-first semantics and the syntax these
// patterns use (\p{..}, (?i:..), lookahead, possessive quantifiers). The engines' Unicode
// versions differ (Debian's PCRE2 10.42: Unicode 14; HF's Oniguruma: Unicode 16), so letters and
// digits added since Unicode 14 are not \p{L} / \p{N} here.
//
// Invalid UTF-8 (meshlm's rule): each byte that does not start a valid sequence is matched as if
// it were a private-use code point (U+E000 + byte), i.e. in none of \s, \p{L}, \p{N}.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace meshlm::hf {

class Regex {
  public:
    // Throws InvalidInput naming `where` and PCRE2's message when the pattern does not compile.
    Regex(const std::string& pattern, const std::string& where);
    ~Regex();
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;

    // Byte ranges [start, end) of the non-overlapping matches in text, leftmost first, as
    // Oniguruma's find_iter reports them (an empty match right after a match is skipped).
    std::vector<std::pair<std::size_t, std::size_t>> find_all(std::string_view text) const;

    // Copy of text with every match replaced by `with`.
    std::string replace_all(std::string_view text, std::string_view with) const;

    const std::string& pattern() const { return pattern_; }

  private:
    void find_valid(std::string_view text,
                    std::vector<std::pair<std::size_t, std::size_t>>& out) const;

    std::string pattern_;
    void* code_ = nullptr;  // pcre2_code_8*
    bool jit_ = false;
};

// Escapes a literal string for use as a pattern (Split / Replace with a "String" pattern).
std::string regex_escape(std::string_view literal);

}  // namespace meshlm::hf

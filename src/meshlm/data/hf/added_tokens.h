// tokenizer.json "added_tokens": finding them in text as HF tokenizers' AddedVocabulary does.
// Tokens with normalized=false are matched on the raw text first; the text between them is
// normalized, then the normalized=true tokens (their content normalized the same way) are
// matched in it. Matching is leftmost-longest; lstrip / rstrip absorb the whitespace beside a
// match, single_word matches only where no letter or digit touches the token.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "meshlm/data/hf/pipeline_types.h"

namespace meshlm::hf {

struct AddedToken {
    std::string content;
    std::int32_t id;
    bool special, lstrip, rstrip, normalized, single_word;
};

class AddedTokenMatcher {
  public:
    // `text` is what to look for (the content, or the normalized content).
    void add(std::string text, const AddedToken& token);
    bool empty() const { return entries_.empty(); }

    // Calls on_text(begin, end) for each stretch of text between matches (possibly empty ones
    // are skipped) and on_token(id) for each match, in order.
    void split(std::string_view text, FunctionRef<void(std::size_t, std::size_t)> on_text,
               FunctionRef<void(std::int32_t)> on_token) const;

  private:
    struct Entry {
        std::string text;
        AddedToken token;
    };
    const Entry* longest_at(std::string_view text, std::size_t i) const;

    std::vector<Entry> entries_;                                 // longest first
    std::array<std::vector<std::uint32_t>, 256> by_first_byte_;  // entry indices, longest first
};

}  // namespace meshlm::hf

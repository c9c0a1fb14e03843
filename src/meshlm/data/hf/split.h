// HF tokenizers' SplitDelimiterBehavior: how a piece is cut around the matches of a pattern
// (a regex, a literal string or a character predicate), with `invert` swapping matches and the
// text between them. Empty results are dropped, as PreTokenizedString::split does.
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include "meshlm/data/hf/pipeline_types.h"

namespace meshlm::hf {

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// "Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous".
SplitBehavior parse_split_behavior(std::string_view name, const Where& w);

using Matches = std::vector<std::pair<std::size_t, std::size_t>>;

// Emits the pieces of `in` cut around `matches` (sorted, non-overlapping byte ranges of in.text).
void split_by_matches(const Piece& in, const Matches& matches, SplitBehavior behavior, bool invert,
                      PieceSink out);

// Every character for which pred(char32_t) holds is one match.
template <typename Pred>
Matches char_matches(std::string_view text, Pred&& pred);

}  // namespace meshlm::hf

#include "meshlm/data/hf/utf8.h"

template <typename Pred>
meshlm::hf::Matches meshlm::hf::char_matches(std::string_view text, Pred&& pred) {
    Matches m;
    for (std::size_t i = 0; i < text.size();) {
        char32_t c;
        const std::size_t n = next_char(text, i, c);
        if (pred(c)) m.emplace_back(i, i + n);
        i += n;
    }
    return m;
}

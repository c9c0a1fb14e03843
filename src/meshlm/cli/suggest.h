// "Did you mean ...?": the closest of a list of valid words to a mistyped one (config keys,
// subcommands).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace meshlm {

// Optimal-string-alignment distance: Levenshtein plus adjacent transpositions.
std::size_t edit_distance(std::string_view a, std::string_view b);
// The same when it is at most `limit`, else limit + 1 (cheap when the lengths differ by more).
std::size_t edit_distance(std::string_view a, std::string_view b, std::size_t limit);

// The candidate closest to `word` when it is close enough to be a plausible typo (at most
// 2 + |word| / 4 edits), else "". Ties go to the earlier candidate.
std::string closest_word(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace meshlm

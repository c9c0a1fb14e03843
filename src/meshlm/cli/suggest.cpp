#include "meshlm/cli/suggest.h"

#include <algorithm>

namespace meshlm {

std::size_t edit_distance(std::string_view a, std::string_view b, std::size_t limit) {
    const std::size_t n = a.size(), m = b.size();
    // An edit changes the length by at most one: a long mistyped word (a fuzzed config key of
    // 4 kB) is refused here instead of filling an n x m table against every candidate.
    if ((n > m ? n - m : m - n) > limit) return limit + 1;
    // Rows i - 2, i - 1 and i of the table (a transposition looks two rows back).
    std::vector<std::size_t> two(m + 1), prev(m + 1), cur(m + 1);
    for (std::size_t j = 0; j <= m; ++j) prev[j] = j;
    std::size_t prev_min = 0;
    for (std::size_t i = 1; i <= n; ++i) {
        cur[0] = i;
        std::size_t cur_min = i;
        for (std::size_t j = 1; j <= m; ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                cur[j] = std::min(cur[j], two[j - 2] + 1);
            cur_min = std::min(cur_min, cur[j]);
        }
        // Every later cell builds on one of the last two rows: once both are past the limit,
        // so is the distance.
        if (cur_min > limit && prev_min > limit) return limit + 1;
        prev_min = cur_min;
        std::swap(two, prev);
        std::swap(prev, cur);
    }
    return std::min(prev[m], limit + 1);
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
    return edit_distance(a, b, std::max(a.size(), b.size()));  // never more than the longer
}

std::string closest_word(std::string_view word, const std::vector<std::string>& candidates) {
    std::string best;
    std::size_t best_score = 2 + word.size() / 4 + 1;
    for (const auto& c : candidates)
        if (const auto d = edit_distance(word, c, best_score - 1); d < best_score)
            best_score = d, best = c;
    return best;
}

}  // namespace meshlm

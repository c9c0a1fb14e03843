// Added-token matching (added_tokens.h), after tokenizers/src/tokenizer/added_vocabulary.rs
// find_matches.
#include "meshlm/data/hf/added_tokens.h"

#include <algorithm>

#include "meshlm/data/hf/unicode_norm.h"
#include "meshlm/data/hf/utf8.h"

namespace meshlm::hf {

namespace {

bool is_alnum(char32_t c) {
    const auto k = unicode::classify(is_invalid_byte(c) ? 0xFFFD : c);
    return !is_invalid_byte(c) &&
           (k == unicode::CharClass::Letter || k == unicode::CharClass::Number);
}

// Start of the character that ends at `end` (end > 0).
std::size_t char_before(std::string_view t, std::size_t end) {
    std::size_t b = end - 1;
    while (b > 0 && end - b < 4 && (static_cast<unsigned char>(t[b]) & 0xC0) == 0x80) --b;
    char32_t c;
    return b + next_char(t, b, c) == end ? b : end - 1;
}

}  // namespace

void AddedTokenMatcher::add(std::string text, const AddedToken& token) {
    if (text.empty()) return;
    entries_.push_back({std::move(text), token});
    std::stable_sort(entries_.begin(), entries_.end(),
                     [](const Entry& a, const Entry& b) { return a.text.size() > b.text.size(); });
    for (auto& b : by_first_byte_) b.clear();
    for (std::uint32_t i = 0; i < entries_.size(); ++i)
        by_first_byte_[static_cast<unsigned char>(entries_[i].text[0])].push_back(i);
}

const AddedTokenMatcher::Entry* AddedTokenMatcher::longest_at(std::string_view text,
                                                              std::size_t i) const {
    for (const std::uint32_t k : by_first_byte_[static_cast<unsigned char>(text[i])]) {
        const Entry& e = entries_[k];
        if (text.compare(i, e.text.size(), e.text) == 0) return &e;
    }
    return nullptr;
}

void AddedTokenMatcher::split(std::string_view text,
                              FunctionRef<void(std::size_t, std::size_t)> on_text,
                              FunctionRef<void(std::int32_t)> on_token) const {
    std::size_t done = 0;  // end of what was emitted
    for (std::size_t i = 0; i < text.size();) {
        const Entry* e = by_first_byte_[static_cast<unsigned char>(text[i])].empty()
                             ? nullptr
                             : longest_at(text, i);
        if (!e) {
            ++i;
            continue;
        }
        std::size_t start = i, stop = i + e->text.size();
        i = stop;  // the next search starts after the match itself (aho-corasick)
        char32_t c;
        if (e->token.single_word) {
            const bool word_before =
                start > 0 && (next_char(text, char_before(text, start), c), is_alnum(c));
            const bool word_after = stop < text.size() && (next_char(text, stop, c), is_alnum(c));
            if (word_before || word_after) continue;
        }
        if (e->token.lstrip) {
            std::size_t s = start;
            while (s > 0) {
                const std::size_t b = char_before(text, s);
                next_char(text, b, c);
                if (!is_whitespace(c)) break;
                s = b;
            }
            start = std::max(s, done);
        }
        if (e->token.rstrip)
            while (stop < text.size()) {
                const std::size_t n = next_char(text, stop, c);
                if (!is_whitespace(c)) break;
                stop += n;
            }
        if (done < start) on_text(done, start);
        on_token(e->token.id);
        done = stop;
    }
    if (done < text.size()) on_text(done, text.size());
}

}  // namespace meshlm::hf

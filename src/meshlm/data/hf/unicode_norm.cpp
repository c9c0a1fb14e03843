// Unicode normalization and character classes over the generated tables (unicode_norm.h).
#include "meshlm/data/hf/unicode_norm.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "meshlm/data/hf/unicode_tables.h"
#include "meshlm/data/hf/utf8.h"
#include "meshlm/data/unicode_categories.h"

namespace meshlm::hf {

namespace {

using unicode_tables::CodePointRange;
using unicode_tables::MapEntry;

constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount;
constexpr char32_t kSCount = kLCount * kNCount;

bool in_ranges(const CodePointRange* r, std::size_t n, char32_t c) {
    const auto* it =
        std::upper_bound(r, r + n, c, [](char32_t v, const CodePointRange& x) { return v < x.lo; });
    return it != r && c <= (it - 1)->hi;
}

const MapEntry* find_entry(const MapEntry* e, std::size_t n, char32_t c) {
    const auto* it =
        std::lower_bound(e, e + n, c, [](const MapEntry& x, char32_t v) { return x.cp < v; });
    return it != e + n && it->cp == c ? it : nullptr;
}

// Appends the full decomposition of c (itself when it has none).
void decompose(char32_t c, bool compat, std::vector<char32_t>& out) {
    const auto& t = unicode_tables::tables();
    if (c >= kSBase && c < kSBase + kSCount) {
        const char32_t s = c - kSBase;
        out.push_back(kLBase + s / kNCount);
        out.push_back(kVBase + (s % kNCount) / kTCount);
        if (s % kTCount) out.push_back(kTBase + s % kTCount);
        return;
    }
    if (c < 0xA0 || is_invalid_byte(c)) {
        out.push_back(c);
        return;
    }
    if (compat)
        if (const MapEntry* e = find_entry(t.compat, t.n_compat, c)) {
            out.insert(out.end(), t.compat_pool + e->offset, t.compat_pool + e->offset + e->length);
            return;
        }
    if (const MapEntry* e = find_entry(t.canon, t.n_canon, c)) {
        out.insert(out.end(), t.canon_pool + e->offset, t.canon_pool + e->offset + e->length);
        return;
    }
    out.push_back(c);
}

// Stable sort of every run of non-starters by combining class.
void canonical_order(std::vector<char32_t>& s) {
    for (std::size_t i = 0; i < s.size();) {
        if (combining_class(s[i]) == 0) {
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j < s.size() && combining_class(s[j]) != 0) ++j;
        std::stable_sort(s.begin() + i, s.begin() + j, [](char32_t a, char32_t b) {
            return combining_class(a) < combining_class(b);
        });
        i = j;
    }
}

char32_t compose_pair(char32_t a, char32_t b) {
    if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
        return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
    if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
        b < kTBase + kTCount)
        return a + (b - kTBase);
    const auto& t = unicode_tables::tables();
    const auto* end = t.compose + t.n_compose;
    const auto* it = std::lower_bound(t.compose, end, std::pair{a, b}, [](const auto& x, auto v) {
        return x.first != v.first ? x.first < v.first : x.second < v.second;
    });
    return it != end && it->first == a && it->second == b ? it->composed : 0;
}

// Canonical composition in place (UAX #15): a character joins the last starter unless blocked.
void compose(std::vector<char32_t>& s) {
    std::size_t out = 0;
    std::ptrdiff_t starter = -1;
    std::uint8_t last_cc = 0;
    for (const char32_t c : s) {
        const std::uint8_t cc = combining_class(c);
        if (starter >= 0) {
            const bool adjacent = static_cast<std::size_t>(starter) + 1 == out;
            if (adjacent || (last_cc != 0 && last_cc < cc)) {
                if (const char32_t k = compose_pair(s[starter], c)) {
                    s[starter] = k;
                    continue;
                }
            }
        }
        if (cc == 0) starter = static_cast<std::ptrdiff_t>(out);
        last_cc = cc;
        s[out++] = c;
    }
    s.resize(out);
}

}  // namespace

std::uint8_t combining_class(char32_t c) {
    if (c < 0x300 || is_invalid_byte(c)) return 0;
    const auto& t = unicode_tables::tables();
    const auto* end = t.ccc + t.n_ccc;
    const auto* it =
        std::upper_bound(t.ccc, end, c, [](char32_t v, const auto& r) { return v < r.lo; });
    return it != t.ccc && c <= (it - 1)->hi ? (it - 1)->ccc : 0;
}

std::string unicode_normalize(std::string_view text, NormForm form) {
    const bool composed = form == NormForm::NFC || form == NormForm::NFKC;
    const bool compat = form == NormForm::NFKC || form == NormForm::NFKD;
    // Below U+0300 (lead bytes < 0xCC) NFC changes nothing; ASCII is stable in every form.
    const unsigned char limit = form == NormForm::NFC ? 0xCC : 0x80;
    if (std::all_of(text.begin(), text.end(),
                    [&](char ch) { return static_cast<unsigned char>(ch) < limit; }))
        return std::string(text);
    std::vector<char32_t> cps;
    cps.reserve(text.size());
    for_each_char(text, [&](char32_t c, std::size_t) { decompose(c, compat, cps); });
    canonical_order(cps);
    if (composed) compose(cps);
    std::string out;
    out.reserve(text.size() + 8);
    for (const char32_t c : cps) append_utf8(c, out);
    return out;
}

std::string unicode_lowercase(std::string_view text) {
    const auto& t = unicode_tables::tables();
    std::string out;
    out.reserve(text.size());
    for_each_char(text, [&](char32_t c, std::size_t) {
        if (c < 0x80) {
            out.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
        } else if (const MapEntry* e = find_entry(t.lower, t.n_lower, c)) {
            for (std::uint32_t i = 0; i < e->length; ++i)
                append_utf8(t.lower_pool[e->offset + i], out);
        } else {
            append_utf8(c, out);
        }
    });
    return out;
}

bool is_punctuation(char32_t c) {
    const auto& t = unicode_tables::tables();
    return !is_invalid_byte(c) && in_ranges(t.punct, t.n_punct, c);
}
bool is_mark(char32_t c) {
    const auto& t = unicode_tables::tables();
    return !is_invalid_byte(c) && in_ranges(t.mark, t.n_mark, c);
}
bool is_word_char(char32_t c) {
    if (c < 0x80)
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_';
    const auto& t = unicode_tables::tables();
    return !is_invalid_byte(c) && in_ranges(t.word, t.n_word, c);
}
bool is_whitespace(char32_t c) {
    return !is_invalid_byte(c) && unicode::classify(c) == unicode::CharClass::Space;
}
bool is_numeric(char32_t c) {
    return !is_invalid_byte(c) && unicode::classify(c) == unicode::CharClass::Number;
}

}  // namespace meshlm::hf

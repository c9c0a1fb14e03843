#include "meshlm/data/pretokenize.h"

#include "meshlm/data/unicode_categories.h"

namespace meshlm {

namespace {

using unicode::CharClass;

struct Cursor {
    const unsigned char* p;
    std::size_t n;

    // Class and byte length of the code point at i (i < n).
    CharClass at(std::size_t i, std::size_t& len) const {
        if (p[i] < 0x80) {
            len = 1;
            return unicode::classify(p[i]);
        }
        char32_t cp;
        len = unicode::decode_utf8(p + i, n - i, cp);
        return unicode::classify(cp);
    }

    // End of the run of class c starting at i.
    std::size_t run(std::size_t i, CharClass c) const {
        while (i < n) {
            std::size_t len;
            if (at(i, len) != c) break;
            i += len;
        }
        return i;
    }
};

}  // namespace

std::size_t gpt2_piece_length(std::string_view text, std::size_t pos) {
    const Cursor cur{reinterpret_cast<const unsigned char*>(text.data()), text.size()};
    const unsigned char* p = cur.p;
    const std::size_t n = cur.n;
    std::size_t i = pos;

    // 's|'t|'re|'ve|'m|'ll|'d (case-sensitive)
    if (p[i] == '\'' && i + 1 < n) {
        const char a = static_cast<char>(p[i + 1]);
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
        if (i + 2 < n) {
            const char b = static_cast<char>(p[i + 2]);
            if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
                return 3;
        }
    }

    std::size_t len;
    CharClass c = cur.at(i, len);
    // ' ?' prefix of the letter / number / other alternatives: only U+0020.
    std::size_t start = i;
    if (p[i] == ' ' && i + 1 < n) {
        std::size_t len2;
        const CharClass next = cur.at(i + 1, len2);
        if (next != CharClass::Space) {
            c = next;
            start = i + 1;
        }
    }
    if (c != CharClass::Space) return cur.run(start, c) - pos;

    // \s+(?!\S)|\s+ : a whitespace run; when a non-space follows, leave its last code point
    // to that next piece (unless the run is a single code point).
    std::size_t end = i;
    std::size_t last = i;  // start of the run's last code point
    while (end < n) {
        std::size_t l;
        if (cur.at(end, l) != CharClass::Space) break;
        last = end;
        end += l;
    }
    if (end == n || last == i) return end - pos;
    return last - pos;
}

std::vector<std::string_view> gpt2_pretokenize(std::string_view text) {
    std::vector<std::string_view> out;
    gpt2_pretokenize(text, [&](std::string_view piece) { out.push_back(piece); });
    return out;
}

}  // namespace meshlm

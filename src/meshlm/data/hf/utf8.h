// UTF-8 walking for the HF pipeline (data/hf/) under meshlm's invalid-UTF-8 rule: a byte that
// does not start a valid shortest-form sequence is one character of its own, reported as
// kInvalidByteBase | byte, which no Unicode class contains and append_utf8 writes back as that
// byte. So every stage passes invalid bytes through unchanged.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "meshlm/data/unicode_categories.h"

namespace meshlm::hf {

inline constexpr char32_t kInvalidByteBase = 0x80000000;

inline bool is_invalid_byte(char32_t c) {
    return c >= kInvalidByteBase;
}

// Decodes the character at text[i]; returns its byte length.
inline std::size_t next_char(std::string_view text, std::size_t i, char32_t& c) {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data()) + i;
    if (*p < 0x80) {
        c = *p;
        return 1;
    }
    const std::size_t n = unicode::decode_utf8(p, text.size() - i, c);
    if (c == unicode::kInvalidCodePoint) c = kInvalidByteBase | *p;
    return n;
}

// Calls fn(char32_t c, std::size_t byte_offset) for every character of text.
template <typename Fn>
void for_each_char(std::string_view text, Fn&& fn) {
    for (std::size_t i = 0; i < text.size();) {
        char32_t c;
        const std::size_t n = next_char(text, i, c);
        fn(c, i);
        i += n;
    }
}

inline void append_utf8(char32_t c, std::string& out) {
    if (c < 0x80) {
        out.push_back(static_cast<char>(c));
    } else if (is_invalid_byte(c)) {
        out.push_back(static_cast<char>(c & 0xFF));
    } else if (c < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (c >> 6)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (c >> 12)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (c >> 18)));
        out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
}

// True when text is valid UTF-8 (fast for ASCII).
inline bool is_valid_utf8(std::string_view text) {
    for (std::size_t i = 0; i < text.size();) {
        if (static_cast<unsigned char>(text[i]) < 0x80) {
            ++i;
            continue;
        }
        char32_t c;
        i += next_char(text, i, c);
        if (is_invalid_byte(c)) return false;
    }
    return true;
}

}  // namespace meshlm::hf

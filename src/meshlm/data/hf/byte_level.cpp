// bytes_to_unicode and its inverse (byte_level.h).
#include "meshlm/data/hf/byte_level.h"

#include <algorithm>
#include <iterator>

#include "meshlm/data/hf/utf8.h"

namespace meshlm::hf {

namespace {

struct ByteChars {
    std::int16_t to_byte[324];  // code point -> byte, -1 if not in the table
    char32_t to_char[256];
    ByteChars() {
        std::fill(std::begin(to_byte), std::end(to_byte), -1);
        int n = 0;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
            to_char[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
            to_byte[to_char[b]] = static_cast<std::int16_t>(b);
        }
    }
};

const ByteChars& byte_chars() {
    static const ByteChars t;
    return t;
}

}  // namespace

int byte_of_char(char32_t c) {
    return c < 324 ? byte_chars().to_byte[c] : -1;
}
char32_t char_of_byte(unsigned char b) {
    return byte_chars().to_char[b];
}

std::string unmap_byte_level(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        char32_t c;
        const std::size_t n = next_char(s, i, c);
        const int b = byte_of_char(c);
        if (b >= 0)
            out.push_back(static_cast<char>(b));
        else
            out.append(s.substr(i, n));
        i += n;
    }
    return out;
}

std::string decode_byte_level_token(std::string_view token) {
    std::string out;
    out.reserve(token.size());
    for (std::size_t i = 0; i < token.size();) {
        char32_t c;
        i += next_char(token, i, c);
        const int b = byte_of_char(c);
        if (b < 0) return std::string(token);
        out.push_back(static_cast<char>(b));
    }
    return out;
}

}  // namespace meshlm::hf

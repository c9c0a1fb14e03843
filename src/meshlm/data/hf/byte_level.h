// GPT-2's bytes_to_unicode (HF ByteLevel's bytes_char): printable bytes map to themselves, the
// other 68 to U+0100.. in increasing byte order. The BPE model maps a byte-level vocabulary back
// to raw bytes with it; the ByteLevel decoder maps tokens to bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace meshlm::hf {

// The byte of a byte-level character, or -1.
int byte_of_char(char32_t c);
// The byte-level character of a byte.
char32_t char_of_byte(unsigned char b);

// A vocabulary string -> raw bytes; characters outside the table keep their UTF-8 bytes.
std::string unmap_byte_level(std::string_view s);

// HF's ByteLevel decoder on one token: bytes when every character is in the table, else the
// token unchanged.
std::string decode_byte_level_token(std::string_view token);

}  // namespace meshlm::hf

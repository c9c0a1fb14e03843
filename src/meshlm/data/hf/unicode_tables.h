// Raw Unicode tables for the HF pipeline (data/hf/), generated from HF tokenizers and CPython's
// unicodedata by tools/reference/gen_hf_unicode_tables.py into unicode_tables.cpp. Read through
// unicode_norm.h, which holds the lookups; nothing else includes this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

namespace meshlm::hf::unicode_tables {

struct MapEntry {  // code point -> pool[offset, offset + length)
    char32_t cp;
    std::uint32_t offset, length;
};
struct ComposePair {  // first + second -> composed (sorted by first, second)
    char32_t first, second, composed;
};
struct CccRange {
    char32_t lo, hi;
    std::uint8_t ccc;
};
struct CodePointRange {
    char32_t lo, hi;
};

struct Tables {
    const MapEntry* canon;  // full canonical decomposition (NFD), Hangul excepted
    std::size_t n_canon;
    const char32_t* canon_pool;
    const MapEntry* compat;  // full compatibility decomposition where it differs from canon
    std::size_t n_compat;
    const char32_t* compat_pool;
    const MapEntry* lower;  // Rust to_lowercase of one code point, where it changes
    std::size_t n_lower;
    const char32_t* lower_pool;
    const ComposePair* compose;
    std::size_t n_compose;
    const CccRange* ccc;
    std::size_t n_ccc;
    const CodePointRange* punct;  // HF Punctuation pre-tokenizer
    std::size_t n_punct;
    const CodePointRange* mark;  // HF StripAccents removes these
    std::size_t n_mark;
    const CodePointRange* word;  // Oniguruma \w
    std::size_t n_word;
};

const Tables& tables();

}  // namespace meshlm::hf::unicode_tables

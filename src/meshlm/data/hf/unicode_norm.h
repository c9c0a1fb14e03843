// Unicode normalization (NFC, NFD, NFKC, NFKD), per-code-point lowercase and the character
// classes of HF tokenizers' normalizers and pre-tokenizers, over the generated tables of
// unicode_tables.cpp (tools/reference/gen_hf_unicode_tables.py: HF tokenizers 0.23 probed, so
// the results are theirs, Unicode ~14-16 depending on the table, see that script).
//
// Text is UTF-8. A byte that does not start a valid UTF-8 sequence is one "character" of its own
// that nothing decomposes, composes, lowercases or classifies (it is copied as is): meshlm's
// invalid-UTF-8 rule (docs/tokenizers-and-data.md).
#pragma once

#include <string>
#include <string_view>

namespace meshlm::hf {

enum class NormForm { NFC, NFD, NFKC, NFKD };

// The normalization form of text.
std::string unicode_normalize(std::string_view text, NormForm form);
// Rust char::to_lowercase of every code point (no context: Σ -> σ always), as HF's Lowercase.
std::string unicode_lowercase(std::string_view text);

std::uint8_t combining_class(char32_t c);
bool is_punctuation(char32_t c);  // HF Punctuation / BertPreTokenizer: ASCII or Unicode P*
bool is_mark(char32_t c);         // removed by HF StripAccents
bool is_word_char(char32_t c);    // Oniguruma \w (Whitespace pre-tokenizer)
bool is_whitespace(char32_t c);   // Rust char::is_whitespace (Unicode White_Space)
bool is_numeric(char32_t c);      // Rust char::is_numeric (Nd, Nl, No)

}  // namespace meshlm::hf

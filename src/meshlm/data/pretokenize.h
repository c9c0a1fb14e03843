// The GPT-2 pre-tokenizer as a hand-written scanner over UTF-8 bytes. Equivalent to the regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// used by GPT-2 (HF ByteLevel use_regex / Split, tiktoken r50k_base "gpt2"). Its pieces cover the
// text, so a pre-tokenization is a sequence of end offsets.
//
// Invalid UTF-8: HF tokenizers and tiktoken only accept valid strings (Rust &str). Here every byte
// that does not start a valid shortest-form UTF-8 sequence is one code point of its own, in none
// of \s, \p{L}, \p{N} (like a private-use character), so it joins ` ?[^\s\p{L}\p{N}]+` runs and
// counts as \S for the lookahead. tools/reference/tokenizer_reference.py checks this against the
// libraries by substituting private-use code points for such bytes.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace meshlm {

// Byte length of the GPT-2 pre-token that starts at text[pos] (pos < text.size()).
std::size_t gpt2_piece_length(std::string_view text, std::size_t pos);

// Calls fn(std::string_view piece) for every pre-token of text, in order.
template <typename Fn>
void gpt2_pretokenize(std::string_view text, Fn&& fn) {
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t n = gpt2_piece_length(text, pos);
        fn(text.substr(pos, n));
        pos += n;
    }
}

// The pre-tokens as views into text.
std::vector<std::string_view> gpt2_pretokenize(std::string_view text);

// The GPT-2 pattern as written in tokenizer.json Split pre-tokenizers (exact string match).
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace meshlm

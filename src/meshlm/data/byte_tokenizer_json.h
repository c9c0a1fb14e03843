// meshlm's byte tokenizer (ids 0..255 the bytes, 256 the end of text) as a Hugging Face
// tokenizer.json, so that an HF export of a byte-level model loads in transformers.
//
// The scheme: a BPE model without merges whose vocabulary is the 256 ByteLevel characters
// (GPT-2's bytes_to_unicode), byte b at id b; a ByteLevel pre-tokenizer that does not split
// (use_regex false) and a ByteLevel decoder; "<|endoftext|>" an added special token at 256.
// HF `tokenizers` then encodes any text to exactly its UTF-8 bytes and decodes ids to their
// bytes (invalid UTF-8 as U+FFFD, where meshlm keeps the bytes). One difference remains in the
// file alone: HF matches the literal text "<|endoftext|>" as token 256 where meshlm encodes its
// 13 bytes; the tokenizer_config.json written with it sets split_special_tokens, which makes
// transformers' AutoTokenizer encode it as bytes too (tools/reference/byte_tokenizer_reference.py
// and tests/convert/hf_tokenizer_check.py check all of it against transformers).
#pragma once

#include <string>

namespace meshlm {

// The end-of-text token's text in the exported files.
inline constexpr const char* kByteEotToken = "<|endoftext|>";

// The tokenizer.json text, pretty-printed as HF's Tokenizer.save() writes it.
std::string byte_tokenizer_json();

// Whether the tokenizer.json at `path` is the byte tokenizer's (the same JSON as
// byte_tokenizer_json(), however formatted). False for an unreadable or other file.
bool is_byte_tokenizer_json(const std::string& path);

}  // namespace meshlm

// The fuzz targets' use of a loaded tokenizer (tokenizer_json, tiktoken, spm_model): load it
// from `path` with make_tokenizer, encode and decode a probe text, decode the ids at both ends of
// the vocabulary and the end-of-text id. Throws what the tokenizer throws.
#pragma once

#include <string>

namespace meshlm::fuzz {

void probe_tokenizer(const std::string& path);

}  // namespace meshlm::fuzz

// tokenizer.json "pre_tokenizer": Split (any regex or string, every behavior, invert),
// ByteLevel, Metaspace, Digits, Punctuation, Whitespace, WhitespaceSplit, BertPreTokenizer and
// Sequence of these, as HF tokenizers 0.23 cuts text. Anything else is refused by name.
//
// ByteLevel does not map bytes to its printable characters here: the pipeline keeps raw bytes
// and the BPE model maps its vocabulary back to bytes instead (byte_level below), which is the
// same tokenization. So ByteLevel must be the last pre-tokenizer. Split with the GPT-2 pattern
// (and ByteLevel's regex, the same one) runs the hand-written scanner of data/pretokenize.h,
// which tests/hf_tokenizer_families_test.cpp checks against PCRE2 and which is measured faster.
#pragma once

#include <memory>

#include "meshlm/data/hf/json_read.h"
#include "meshlm/data/hf/pipeline_types.h"

namespace meshlm::hf {

class PreTokenizer {
  public:
    virtual ~PreTokenizer() = default;
    // Emits the pieces of `in`, in order.
    virtual void split(const Piece& in, PieceSink out) const = 0;
};

// null -> nullptr. byte_level is set when a ByteLevel pre-tokenizer is present (last).
std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const Json& j, const Where& w, bool& byte_level);

}  // namespace meshlm::hf

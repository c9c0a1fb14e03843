// tokenizer.json "decoder": ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, WordPiece
// and Sequence of these, each a step over the list of token strings as in HF tokenizers 0.23
// (decode_chain); the results are concatenated. Anything else (CTC, BPEDecoder, ...) is refused
// by name. meshlm's one departure: invalid UTF-8 is kept as raw bytes where HF substitutes
// U+FFFD (ByteLevel's from_utf8_lossy, ByteFallback's "�" per byte), so the text of a partial
// id sequence concatenates to that of the whole.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "meshlm/data/hf/json_read.h"

namespace meshlm::hf {

class Decoder {
  public:
    virtual ~Decoder() = default;
    virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

// null -> nullptr (HF then joins the tokens with spaces).
std::unique_ptr<Decoder> parse_decoder(const Json& j, const Where& w);

}  // namespace meshlm::hf

// tokenizer.json "normalizer": NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, Replace,
// Prepend and Sequence of these, each as HF tokenizers 0.23 applies it to a piece of text.
// Anything else (BertNormalizer, Precompiled, Nmt, ...) is refused by name.
#pragma once

#include <memory>
#include <string>

#include "meshlm/data/hf/json_read.h"

namespace meshlm::hf {

class Normalizer {
  public:
    virtual ~Normalizer() = default;
    virtual void normalize(std::string& text) const = 0;
};

// null -> nullptr.
std::unique_ptr<Normalizer> parse_normalizer(const Json& j, const Where& w);

}  // namespace meshlm::hf

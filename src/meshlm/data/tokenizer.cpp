#include "meshlm/data/tokenizer.h"

#include "meshlm/core/error.h"

namespace meshlm {

std::vector<std::int32_t> ByteTokenizer::encode(std::string_view text) const {
    std::vector<std::int32_t> ids(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
    return ids;
}

std::string ByteTokenizer::decode(const std::vector<std::int32_t>& ids) const {
    std::string s;
    s.reserve(ids.size());
    for (auto id : ids)
        if (id >= 0 && id < 256) s.push_back(static_cast<char>(id));
    return s;
}

std::unique_ptr<Tokenizer> make_tokenizer(const std::string& spec) {
    if (spec == "byte") return std::make_unique<ByteTokenizer>();
    MESHLM_INVALID("unknown tokenizer '", spec, "'; valid: byte");
}

}  // namespace meshlm

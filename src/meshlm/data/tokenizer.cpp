#include "meshlm/data/tokenizer.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "meshlm/core/error.h"
#include "meshlm/data/bpe_tokenizer.h"
#include "meshlm/data/hf/hf_tokenizer.h"
#include "meshlm/data/spm_tokenizer.h"

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

std::string read_tokenizer_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) MESHLM_INVALID("cannot open tokenizer file '", path, "'");
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::unique_ptr<Tokenizer> make_tokenizer(const std::string& spec) {
    if (spec == "byte") return std::make_unique<ByteTokenizer>();
    const auto ends_with = [&](std::string_view suffix) {
        return spec.size() >= suffix.size() &&
               spec.compare(spec.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (ends_with(".json") || ends_with(".tiktoken") || ends_with(".model")) {
        if (!std::filesystem::exists(spec))
            MESHLM_INVALID("tokenizer file '", spec, "' does not exist");
        if (ends_with(".json")) return HfTokenizer::from_file(spec);
        if (ends_with(".model")) return SpmTokenizer::from_file(spec);
        return BpeTokenizer::from_tiktoken(spec);
    }
    MESHLM_INVALID(
        "unknown tokenizer '", spec,
        "'; valid: byte, a HF tokenizer.json path (*.json) or a tiktoken rank file "
        "(*.tiktoken, GPT-2 pattern and <|endoftext|>=50256) or a SentencePiece model (*.model)");
}

}  // namespace meshlm

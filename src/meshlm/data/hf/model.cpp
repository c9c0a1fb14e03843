// Picks the tokenizer.json model (model.h).
#include "meshlm/data/hf/model.h"

namespace meshlm::hf {

std::unique_ptr<Model> parse_model(const Json& j, const Where& w, bool byte_level) {
    const std::string type = json_type(j, w);
    if (type == "BPE") return make_bpe_model(j, w, byte_level);
    if (byte_level && (type == "Unigram" || type == "WordPiece"))
        w.fail("model type \"", type,
               "\" with a ByteLevel pre-tokenizer is not supported (only BPE is byte-level)");
    if (type == "Unigram") return make_unigram_model(j, w);
    if (type == "WordPiece") return make_wordpiece_model(j, w);
    w.refuse("model", type, "BPE, Unigram, WordPiece");
}

}  // namespace meshlm::hf

// tokenizer.json "model": the interface of the three models (BPE, Unigram, WordPiece) and the
// parser that picks one. Anything else (WordLevel, ...) is refused by name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "meshlm/data/hf/json_read.h"

namespace meshlm::hf {

class Model {
  public:
    virtual ~Model() = default;
    // Appends the ids of one pre-token.
    virtual void tokenize(std::string_view piece, std::vector<std::int32_t>& out) const = 0;
    // Every vocabulary entry as (token string as written in tokenizer.json, id).
    virtual std::vector<std::pair<std::string, std::int32_t>> vocab() const = 0;
};

// The <0xXX> tokens of a vocabulary, for byte_fallback (BPE and Unigram).
class ByteFallbackIds {
  public:
    // id_of(std::string_view) -> id or -1.
    template <typename IdOf>
    explicit ByteFallbackIds(IdOf&& id_of) {
        static const char* kHex = "0123456789ABCDEF";
        for (int b = 0; b < 256; ++b) {
            const char name[7] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>', 0};
            ids_[b] = id_of(std::string_view(name, 6));
        }
    }
    // Appends the byte tokens of s when all of them exist; false (nothing appended) otherwise.
    bool append(std::string_view s, std::vector<std::int32_t>& out) const {
        for (char c : s)
            if (ids_[static_cast<unsigned char>(c)] < 0) return false;
        for (char c : s) out.push_back(ids_[static_cast<unsigned char>(c)]);
        return true;
    }

  private:
    std::int32_t ids_[256];
};

// byte_level: the pre-tokenizer has ByteLevel, so pieces are raw bytes and the vocabulary is in
// bytes_to_unicode characters (only BPE supports it).
std::unique_ptr<Model> parse_model(const Json& j, const Where& w, bool byte_level);

// The models (bpe_model.cpp, unigram_model.cpp, wordpiece_model.cpp).
std::unique_ptr<Model> make_bpe_model(const Json& j, const Where& w, bool byte_level);
std::unique_ptr<Model> make_unigram_model(const Json& j, const Where& w);
std::unique_ptr<Model> make_wordpiece_model(const Json& j, const Where& w);

}  // namespace meshlm::hf

// Byte-level BPE (GPT-2 family) loaded from a tiktoken rank file.
//
// Encoding: special tokens are cut out of the raw text first (leftmost-longest; tiktoken's
// allowed_special="all"), the rest is split with the GPT-2 pre-tokenizer (pretokenize.h) and
// every piece is merged by lowest rank (leftmost on ties) through BpeMerges (bpe_merges.h).
// Hugging Face tokenizer.json files load through the HF pipeline instead (data/hf/).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "meshlm/data/bpe_merges.h"
#include "meshlm/data/tokenizer.h"

namespace meshlm {

class BpeTokenizer : public Tokenizer {
  public:
    // tiktoken rank file ("base64 rank" per line; rank = id) with GPT-2's pattern and
    // specials {"<|endoftext|>": 50256}; vocab_size max(n_ranks, 50257).
    static std::unique_ptr<BpeTokenizer> from_tiktoken(const std::string& path);

    // Like tiktoken encode_ordinary (specials in the text are plain text).
    std::vector<std::int32_t> encode(std::string_view text) const override;
    std::vector<std::int32_t> encode_ordinary(std::string_view text) const;
    // Added / special tokens in text map to their ids (tiktoken: allowed_special="all").
    std::vector<std::int32_t> encode_with_special(std::string_view text) const;
    // Appends the ids of text without matching special tokens.
    void encode_ordinary_into(std::string_view text, std::vector<std::int32_t>& out) const;

    // Concatenated token bytes. Special tokens (and ids outside the vocabulary) decode to
    // nothing. Invalid UTF-8 is kept as is, so decode(encode(x)) == x for any bytes.
    std::string decode(const std::vector<std::int32_t>& ids) const override;
    int vocab_size() const override { return vocab_size_; }
    std::int32_t eot_id() const override { return eot_id_; }
    std::string name() const override { return name_; }

    // Id of a token given by its raw bytes (added tokens included).
    std::optional<std::int32_t> token_id(std::string_view bytes) const;

  private:
    struct Special {
        std::string text;
        std::int32_t id;
        bool special, lstrip, rstrip;
    };
    struct StringHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const {
            return std::hash<std::string_view>{}(s);
        }
    };

    BpeTokenizer() = default;
    void add_token(std::string bytes, std::int32_t id);
    void finish(const std::string& path);  // byte table, merge table, vocab size checks
    void encode_piece(std::string_view piece, std::vector<std::int32_t>& out) const;
    void encode_impl(std::string_view text, bool specials, std::vector<std::int32_t>& out) const;

    std::string name_;
    std::string path_;
    std::unordered_map<std::string, std::int32_t, StringHash, std::equal_to<>> token_ids_;
    std::vector<std::string> id_bytes_;  // id -> raw bytes ("" for unused ids)
    std::vector<std::uint8_t> id_skip_;  // id -> 1 when decode skips it (special)
    std::int32_t byte_ids_[256];         // byte value -> id of the one-byte token (-1: none)
    BpeMerges merges_;
    std::vector<Special> specials_;
    bool whole_piece_lookup_ = false;  // tiktoken: a piece that is a token is that token
    bool specials_in_encode_ = false;
    int vocab_size_ = 0;
    std::int32_t eot_id_ = -1;
    // The largest id add_token accepts: a loader sets it from the number of tokens its file
    // declares, plus kIdGap, so a 20-byte file cannot ask for a table of 2^31 ids.
    std::int64_t id_limit_ = INT32_MAX;
    static constexpr std::int64_t kIdGap = 65536;
};

}  // namespace meshlm

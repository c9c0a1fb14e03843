// Byte-level BPE (GPT-2 family) loaded from a Hugging Face tokenizer.json or a tiktoken rank file.
//
// Internally everything is raw bytes: tokenizer.json vocab strings are mapped back through the
// ByteLevel byte<->char table (bytes_char), so both formats share one encoder. Encoding:
// special/added tokens are cut out of the raw text first (leftmost-longest), the rest is split
// with the GPT-2 pre-tokenizer (pretokenize.h) and every piece is merged by lowest rank
// (leftmost on ties) using a flat hash table (left id, right id) -> (rank, merged id).
//
// Supported tokenizer.json: model.type "BPE" without dropout, continuing_subword_prefix,
// end_of_word_suffix or byte_fallback; normalizer null; pre_tokenizer ByteLevel (add_prefix_space,
// use_regex) or Sequence[Split(GPT-2 pattern, Isolated), ByteLevel(use_regex=false)]; merges as
// "a b" strings or ["a", "b"] pairs. Anything else is refused with a message naming the file.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "meshlm/data/tokenizer.h"

namespace meshlm {

class BpeTokenizer : public Tokenizer {
  public:
    // HF tokenizer.json. eot_id is the added token "<|endoftext|>" (else "</s>",
    // "<|end_of_text|>", "<eos>"); none of them is an error.
    static std::unique_ptr<BpeTokenizer> from_hf_json(const std::string& path);
    // tiktoken rank file ("base64 rank" per line; rank = id) with GPT-2's pattern and
    // specials {"<|endoftext|>": 50256}; vocab_size max(n_ranks, 50257).
    static std::unique_ptr<BpeTokenizer> from_tiktoken(const std::string& path);

    // tokenizer.json: like HF encode(text).ids (added tokens matched, no post-processor).
    // .tiktoken: like tiktoken encode_ordinary (specials in the text are plain text).
    std::vector<std::int32_t> encode(std::string_view text) const override;
    std::vector<std::int32_t> encode_ordinary(std::string_view text) const;
    // Added / special tokens in text map to their ids (tiktoken: allowed_special="all").
    std::vector<std::int32_t> encode_with_special(std::string_view text) const;
    // Appends the ids of text without matching special tokens.
    void encode_ordinary_into(std::string_view text, std::vector<std::int32_t>& out) const;

    // Concatenated token bytes. Special tokens (and ids outside the vocabulary) decode to
    // nothing; non-special HF added tokens decode to their text. Invalid UTF-8 is kept as is
    // (HF's decoder would substitute U+FFFD), so decode(encode(x)) == x for any bytes.
    std::string decode(const std::vector<std::int32_t>& ids) const override;
    int vocab_size() const override { return vocab_size_; }
    std::int32_t eot_id() const override { return eot_id_; }
    std::string name() const override { return name_; }

    // Id of a token given by its raw bytes (added tokens included).
    std::optional<std::int32_t> token_id(std::string_view bytes) const;

  private:
    struct Merge {
        std::uint64_t key;  // (left << 32) | right; kEmpty for a free slot
        std::int32_t rank, merged;
    };
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
    void add_merge(std::int32_t left, std::int32_t right, std::int32_t rank, std::int32_t merged);
    void finish(const std::string& path);  // byte table, merge table, vocab size checks
    const Merge* find_merge(std::int32_t left, std::int32_t right) const;
    void encode_piece(std::string_view piece, std::vector<std::int32_t>& out) const;
    void encode_impl(std::string_view text, bool specials, std::vector<std::int32_t>& out) const;

    std::string name_;
    std::string path_;
    std::unordered_map<std::string, std::int32_t, StringHash, std::equal_to<>> token_ids_;
    std::vector<std::string> id_bytes_;  // id -> raw bytes ("" for unused ids)
    std::vector<std::uint8_t> id_skip_;  // id -> 1 when decode skips it (special)
    std::int32_t byte_ids_[256];         // byte value -> id of the one-byte token (-1: none)
    std::vector<Merge> merges_;          // open addressing, power-of-two size
    std::vector<std::pair<std::uint64_t, std::pair<std::int32_t, std::int32_t>>> pending_;
    std::vector<Special> specials_;
    bool whole_piece_lookup_ = false;  // tiktoken: a piece that is a token is that token
    bool add_prefix_space_ = false;
    bool specials_in_encode_ = false;
    int vocab_size_ = 0;
    std::int32_t eot_id_ = -1;
    // The largest id add_token accepts: a loader sets it from the number of tokens its file
    // declares, plus kIdGap, so a 20-byte file cannot ask for a table of 2^31 ids.
    std::int64_t id_limit_ = INT32_MAX;
    static constexpr std::int64_t kIdGap = 65536;
};

}  // namespace meshlm

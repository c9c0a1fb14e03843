// The tokenizer interface shared by training, sampling and evaluation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace meshlm {

class Tokenizer {
  public:
    virtual ~Tokenizer() = default;
    // The text's tokens alone (HF: add_special_tokens=False); special tokens written in the
    // text are matched where the format has them.
    virtual std::vector<std::int32_t> encode(std::string_view text) const = 0;
    // As a model sees a document: with the tokens the tokenizer adds around it (HF: the
    // post-processor's template, e.g. BOS). Most formats add none.
    virtual std::vector<std::int32_t> encode_for_model(std::string_view text) const {
        return encode(text);
    }
    // Special tokens decode to nothing.
    virtual std::string decode(const std::vector<std::int32_t>& ids) const = 0;
    virtual int vocab_size() const = 0;
    virtual std::int32_t eot_id() const = 0;  // end of document / text
    virtual std::string name() const = 0;     // e.g. "byte"
};

// Byte-level: ids 0..255 are the bytes, 256 is the end-of-document token.
class ByteTokenizer : public Tokenizer {
  public:
    std::vector<std::int32_t> encode(std::string_view text) const override;
    std::string decode(const std::vector<std::int32_t>& ids) const override;
    int vocab_size() const override { return 257; }
    std::int32_t eot_id() const override { return 256; }
    std::string name() const override { return "byte"; }
};

// Builds the tokenizer named by data.tokenizer: "byte", a HF tokenizer.json (*.json;
// hf/hf_tokenizer.h) or a tiktoken rank file (*.tiktoken; bpe_tokenizer.h) or a SentencePiece
// model (*.model; spm_tokenizer.h). Throws InvalidInput for anything else.
std::unique_ptr<Tokenizer> make_tokenizer(const std::string& spec);

// The bytes of a tokenizer file (or a file beside one); InvalidInput naming it if unreadable.
std::string read_tokenizer_file(const std::string& path);

}  // namespace meshlm

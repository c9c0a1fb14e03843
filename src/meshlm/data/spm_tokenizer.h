// SentencePiece tokenizers through Debian's libsentencepiece (0.1.97): loading a `.model` file
// as a meshlm Tokenizer, and training a new model (unigram or BPE) from documents.
//
// The library reports errors as sentencepiece::util::Status; here they become
// meshlm::InvalidInput exceptions naming the file or the training step. The end-of-text token is
// the model's eos piece (`</s>`, id 2 by the trainer's defaults); a model without one is refused.
// Training streams sentences through a SentenceIterator (no temporary text file): every document
// is cut into lines and each non-blank line is one sentence, as SentencePiece expects (its
// default normalizer, nmt_nfkc, would turn '\n' into a space and it skips sentences longer than
// max_sentence_length bytes). The model comes back serialized, for the caller to write.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "meshlm/data/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace meshlm {

class SpmTokenizer : public Tokenizer {
  public:
    static std::unique_ptr<SpmTokenizer> from_file(const std::string& path);
    // A serialized ModelProto (the bytes of a .model file); `name` is used in messages.
    static std::unique_ptr<SpmTokenizer> from_serialized(const std::string& model_proto,
                                                         const std::string& name);
    ~SpmTokenizer() override;

    // SentencePiece's Encode: normalization (nmt_nfkc unless the model says otherwise), then
    // the model's segmentation. decode(encode(x)) == x for text the normalizer leaves unchanged.
    std::vector<std::int32_t> encode(std::string_view text) const override;
    std::string decode(const std::vector<std::int32_t>& ids) const override;
    int vocab_size() const override { return vocab_size_; }
    std::int32_t eot_id() const override { return eot_id_; }
    std::string name() const override { return name_; }

    // The model's .vocab text: "piece\tscore" per id, like spm_train writes it.
    std::string vocab_text() const;

  private:
    SpmTokenizer();
    void init(const std::string& name);

    std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
    std::string name_;
    int vocab_size_ = 0;
    std::int32_t eot_id_ = -1;
};

struct SpmTrainOptions {
    std::string model_type = "unigram";  // "unigram" or "bpe"
    int vocab_size = 8000;
    double character_coverage = 1.0;
    bool byte_fallback = false;
    std::vector<std::string> user_defined_symbols;  // extra pieces never split (e.g. specials)
    int threads = 0;                                // 0: all cores
    int max_sentence_length = 1 << 16;              // bytes; longer lines are skipped
};

// Trains a SentencePiece model. next_document(doc) stores the next document and returns false at
// the end. Returns the serialized model (the .model file's bytes). The piece ids are unk=0,
// bos=1, eos=2 (the trainer's defaults), then the learned pieces. Throws InvalidInput with the
// library's message on failure (e.g. a vocabulary too large for the corpus).
std::string train_spm(const std::function<bool(std::string&)>& next_document,
                      const SpmTrainOptions& opt);

}  // namespace meshlm

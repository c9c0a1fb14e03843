#include "meshlm/data/spm_tokenizer.h"

#include <omp.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <sstream>
#include <unordered_map>

#include "meshlm/core/error.h"

namespace meshlm {

SpmTokenizer::SpmTokenizer() : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}
SpmTokenizer::~SpmTokenizer() = default;

namespace {

// SentencePiece's status, or the exception its double-array trie builder throws on a malformed
// model (Darts::Details::Exception, "zero-length key"), as InvalidInput naming the model.
template <typename Load>
void load_spm(const Load& load, const std::string& name) {
    sentencepiece::util::Status st;
    try {
        st = load();
    } catch (const std::exception& e) {
        MESHLM_INVALID("cannot load SentencePiece model '", name, "': ", e.what());
    }
    if (!st.ok()) MESHLM_INVALID("cannot load SentencePiece model '", name, "': ", st.ToString());
}

}  // namespace

std::unique_ptr<SpmTokenizer> SpmTokenizer::from_file(const std::string& path) {
    std::unique_ptr<SpmTokenizer> t(new SpmTokenizer());
    load_spm([&] { return t->sp_->Load(path); }, path);
    t->init(path);
    return t;
}

std::unique_ptr<SpmTokenizer> SpmTokenizer::from_serialized(const std::string& model_proto,
                                                            const std::string& name) {
    std::unique_ptr<SpmTokenizer> t(new SpmTokenizer());
    load_spm([&] { return t->sp_->LoadFromSerializedProto(model_proto); }, name);
    t->init(name);
    return t;
}

void SpmTokenizer::init(const std::string& name) {
    name_ = "spm:" + name;
    vocab_size_ = sp_->GetPieceSize();
    eot_id_ = sp_->eos_id();
    if (eot_id_ < 0 || eot_id_ >= vocab_size_)
        MESHLM_INVALID("SentencePiece model '", name,
                       "' has no eos piece (trained with --eos_id=-1?); meshlm needs one as the "
                       "end-of-text token");
}

std::vector<std::int32_t> SpmTokenizer::encode(std::string_view text) const {
    std::vector<int> ids;
    const auto st = sp_->Encode(text, &ids);
    if (!st.ok()) MESHLM_INVALID(name_, ": encode failed: ", st.ToString());
    return std::vector<std::int32_t>(ids.begin(), ids.end());
}

std::string SpmTokenizer::decode(const std::vector<std::int32_t>& ids) const {
    std::vector<int> in;
    in.reserve(ids.size());
    for (auto id : ids)
        if (id >= 0 && id < vocab_size_) in.push_back(id);  // out-of-range ids decode to nothing
    std::string out;
    const auto st = sp_->Decode(in, &out);
    if (!st.ok()) MESHLM_INVALID(name_, ": decode failed: ", st.ToString());
    return out;
}

std::string SpmTokenizer::vocab_text() const {
    std::ostringstream os;
    for (int i = 0; i < vocab_size_; ++i)
        os << sp_->IdToPiece(i) << '\t' << sp_->GetScore(i) << '\n';
    return os.str();
}

namespace {

// Feeds the non-blank lines of the documents to the trainer, one sentence each.
class DocumentLines : public sentencepiece::SentenceIterator {
  public:
    explicit DocumentLines(const std::function<bool(std::string&)>& next) : next_(next) { Next(); }
    bool done() const override { return done_; }
    const std::string& value() const override { return line_; }
    sentencepiece::util::Status status() const override { return status_; }
    void Next() override {
        try {
            while (true) {
                while (pos_ < doc_.size()) {
                    std::size_t eol = doc_.find('\n', pos_);
                    if (eol == std::string::npos) eol = doc_.size();
                    line_.assign(doc_, pos_, eol - pos_);
                    pos_ = eol + 1;
                    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
                    if (line_.find_first_not_of(" \t\r\f\v") != std::string::npos) return;
                }
                pos_ = 0;
                if (!next_(doc_)) {
                    done_ = true;
                    return;
                }
                ++documents_;
            }
        } catch (const std::exception& e) {
            // The trainer checks status() once iteration is done; keep the message for the
            // caller, which rethrows it as it was.
            error_ = std::current_exception();
            status_ =
                sentencepiece::util::Status(sentencepiece::util::StatusCode::kInternal, e.what());
            done_ = true;
        }
    }
    std::uint64_t documents() const { return documents_; }
    std::exception_ptr error() const { return error_; }

  private:
    const std::function<bool(std::string&)>& next_;
    std::string doc_, line_;
    std::size_t pos_ = 0;
    bool done_ = false;
    std::uint64_t documents_ = 0;
    sentencepiece::util::Status status_;
    std::exception_ptr error_;
};

}  // namespace

std::string train_spm(const std::function<bool(std::string&)>& next_document,
                      const SpmTrainOptions& opt) {
    if (opt.model_type != "unigram" && opt.model_type != "bpe")
        MESHLM_INVALID("SentencePiece model type must be unigram or bpe, got '", opt.model_type,
                       "'");
    if (opt.vocab_size < 4) MESHLM_INVALID("--vocab-size must be at least 4, got ", opt.vocab_size);
    std::string symbols;
    for (const auto& s : opt.user_defined_symbols) {
        if (s.empty() || s.find(',') != std::string::npos)
            MESHLM_INVALID("SentencePiece special token '", s,
                           "' must be non-empty and hold no ','");
        if (!symbols.empty()) symbols += ',';
        symbols += s;
    }
    std::unordered_map<std::string, std::string> kw = {
        {"model_type", opt.model_type},
        {"vocab_size", std::to_string(opt.vocab_size)},
        {"character_coverage", std::to_string(opt.character_coverage)},
        {"byte_fallback", opt.byte_fallback ? "true" : "false"},
        {"num_threads", std::to_string(opt.threads > 0 ? opt.threads : omp_get_max_threads())},
        {"max_sentence_length", std::to_string(opt.max_sentence_length)},
        {"unk_id", "0"},
        {"bos_id", "1"},
        {"eos_id", "2"},
        {"pad_id", "-1"},
        // Sentences are counted once each; the default (1e7) samples large corpora.
        {"input_sentence_size", "0"},
        {"shuffle_input_sentence", "false"},
    };
    if (!symbols.empty()) kw["user_defined_symbols"] = symbols;
    DocumentLines lines(next_document);
    std::string model;
    const auto st = sentencepiece::SentencePieceTrainer::Train(kw, &lines, &model);
    if (lines.error()) std::rethrow_exception(lines.error());
    if (!st.ok()) MESHLM_INVALID("SentencePiece training failed: ", st.ToString());
    if (lines.documents() == 0) MESHLM_INVALID("SentencePiece training: no documents");
    return model;
}

}  // namespace meshlm

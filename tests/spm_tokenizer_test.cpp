// SentencePiece through libsentencepiece: training (unigram and BPE) from documents, loading the
// .model through make_tokenizer, round trips and the end-of-text id.
#include <gtest/gtest.h>

#include <fstream>

#include "meshlm/core/error.h"
#include "meshlm/data/corpus_reader.h"
#include "meshlm/data/spm_tokenizer.h"
#include "meshlm/data/tokenizer.h"
#include "test_util.h"

namespace meshlm {
namespace {

std::string train(const std::string& type, int vocab) {
    const auto docs = test::read_documents(test::fixture("tokenizers/bpe_train_corpus.txt"), "%");
    std::size_t i = 0;
    SpmTrainOptions opt;
    opt.model_type = type;
    opt.vocab_size = vocab;
    opt.threads = 2;
    return train_spm(
        [&](std::string& d) {
            if (i == docs.size()) return false;
            d = docs[i++];
            return true;
        },
        opt);
}

void check_model(const std::string& type, int vocab) {
    const std::string dir = test::temp_dir("spm_" + type);
    const std::string path = dir + "/m.model";
    std::ofstream(path, std::ios::binary) << train(type, vocab);
    auto tok = make_tokenizer(path);
    EXPECT_EQ(tok->vocab_size(), vocab);
    EXPECT_EQ(tok->eot_id(), 2);
    for (const std::string text : {"Hello world, this is a test.",
                                   "Each op gets a gradient test against finite "
                                   "differences and a cross-backend test against CPU.",
                                   "Café naïve résumé", "日本語のテキスト"}) {
        const auto ids = tok->encode(text);
        EXPECT_FALSE(ids.empty());
        for (auto id : ids) EXPECT_TRUE(id >= 0 && id < vocab);
        EXPECT_EQ(tok->decode(ids), text) << type;
    }
    // Deterministic: training twice gives the same model.
    EXPECT_EQ(train(type, vocab), train(type, vocab));
}

TEST(SpmTokenizer, TrainsUnigram) {
    check_model("unigram", 300);
}
TEST(SpmTokenizer, TrainsBpe) {
    check_model("bpe", 300);
}

TEST(SpmTokenizer, Errors) {
    EXPECT_THROW(make_tokenizer("/nonexistent/m.model"), InvalidInput);
    const std::string dir = test::temp_dir("spm_bad");
    std::ofstream(dir + "/bad.model") << "not a model";
    EXPECT_THROW(make_tokenizer(dir + "/bad.model"), InvalidInput);
    EXPECT_THROW(train("word", 300), InvalidInput);
    EXPECT_THROW(train("unigram", 100000), InvalidInput);  // far too large for the corpus
}

}  // namespace
}  // namespace meshlm

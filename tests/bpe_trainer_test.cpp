// The native byte-level BPE trainer: deterministic, and its tokenizer.json loads in meshlm and
// encodes exactly like HF tokenizers (fixtures from tools/reference/bpe_trainer_reference.py).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "meshlm/core/error.h"
#include "meshlm/data/bpe_tokenizer.h"
#include "meshlm/data/bpe_trainer.h"
#include "meshlm/data/corpus_reader.h"
#include "meshlm/data/hf/hf_tokenizer.h"
#include "test_util.h"

namespace meshlm {
namespace {

std::string train_json(int threads) {
    BpeTrainOptions opt;
    opt.vocab_size = 400;
    opt.threads = threads;
    BpeTrainer trainer(opt);
    trainer.add_documents(
        test::read_documents(test::fixture("tokenizers/bpe_train_corpus.txt"), "%"));
    return bpe_model_to_hf_json(trainer.train());
}

TEST(BpeTrainer, MatchesCommittedJsonAndIsDeterministic) {
    const std::string json = train_json(1);
    EXPECT_EQ(json, train_json(4));
    EXPECT_EQ(json, test::read_file(test::fixture("tokenizers/bpe_trained.json")))
        << "the trainer's output drifted; regenerate with tools/reference/bpe_trainer_reference.py "
           "if intended";
}

TEST(BpeTrainer, EncodesLikeHfTokenizers) {
    const std::string dir = test::temp_dir("bpe_trainer");
    const std::string path = dir + "/tokenizer.json";
    std::ofstream(path, std::ios::binary) << train_json(2);
    auto tok = HfTokenizer::from_file(path);
    EXPECT_EQ(tok->vocab_size(), 400);
    EXPECT_EQ(tok->eot_id(), 0);

    auto docs = test::read_documents(test::fixture("tokenizers/bpe_train_corpus.txt"), "%");
    docs.push_back(test::read_file(test::fixture("tokenizers/bpe_train_corpus.txt")));
    std::ifstream f(test::fixture("tokenizers/bpe_trained.ids"));
    std::vector<std::vector<std::int32_t>> want;
    for (std::string line; std::getline(f, line);) {
        if (!line.empty() && line[0] == '#') continue;
        std::istringstream ss(line);
        std::vector<std::int32_t> ids;
        for (std::int32_t id; ss >> id;) ids.push_back(id);
        want.push_back(ids);
    }
    ASSERT_EQ(want.size(), docs.size());
    for (std::size_t i = 0; i < docs.size(); ++i) {
        EXPECT_EQ(tok->encode(docs[i]), want[i]) << "document " << i;
        EXPECT_EQ(tok->decode(want[i]), docs[i]);
    }
}

TEST(BpeTrainer, TiesAndIdsFollowHf) {
    // "ab" and "cd" both occur 3 times: the smaller pair (by id) merges first. Ids: special 0,
    // then bytes by ByteLevel character ('a' < 'b' < ...), then merges.
    BpeTrainOptions opt;
    opt.vocab_size = 256 + 1 + 2;
    BpeTrainer trainer(opt);
    trainer.add_documents({"cd cd cd ab ab ab"});
    const BpeModel m = trainer.train();
    ASSERT_EQ(m.merges.size(), 2u);
    EXPECT_EQ(m.tokens[m.merges[0].first], "a");
    EXPECT_EQ(m.tokens[m.merges[0].second], "b");
    EXPECT_EQ(m.tokens[257], "ab");
    EXPECT_EQ(m.tokens[0], "<|endoftext|>");
    EXPECT_EQ(m.tokens[1], "!");  // the first ByteLevel character
}

TEST(BpeTrainer, RejectsBadOptions) {
    BpeTrainOptions opt;
    opt.vocab_size = 256;  // no room for <|endoftext|>
    EXPECT_THROW(BpeTrainer{opt}, InvalidInput);
    opt.vocab_size = 300;
    opt.special_tokens = {"<a>", "<a>"};
    EXPECT_THROW(BpeTrainer{opt}, InvalidInput);
    opt.special_tokens = {""};
    EXPECT_THROW(BpeTrainer{opt}, InvalidInput);
}

TEST(BpeTrainer, StopsWhenNoPairIsLeft) {
    BpeTrainOptions opt;
    opt.vocab_size = 1000;
    BpeTrainer trainer(opt);
    trainer.add_documents({"abc"});
    const BpeModel m = trainer.train();
    EXPECT_EQ(m.merges.size(), 2u);  // ab, abc
    EXPECT_EQ(m.tokens.size(), 259u);
}

}  // namespace
}  // namespace meshlm

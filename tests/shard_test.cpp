// Token shards and prepared directories: round trips, dtype choice, refusing bad files, atomic
// writes, the tokenizer check.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "meshlm/core/error.h"
#include "meshlm/core/rng.h"
#include "meshlm/data/prepare.h"
#include "meshlm/data/shard.h"
#include "test_util.h"

namespace fs = std::filesystem;
using namespace meshlm;

namespace {

std::string error_of(const std::string& path) {
    try {
        ShardReader r(path);
    } catch (const InvalidInput& e) {
        return e.what();
    }
    return "";
}

// A tokenizer of a given vocabulary size: bytes, with end-of-text as the last id.
class WideTokenizer : public ByteTokenizer {
  public:
    explicit WideTokenizer(int v) : v_(v) {}
    int vocab_size() const override { return v_; }
    std::int32_t eot_id() const override { return v_ - 1; }
    std::string name() const override { return "wide"; }

  private:
    int v_;
};

}  // namespace

TEST(Shard, RoundTripAndDtypeByVocab) {
    auto dir = test::temp_dir("shard_rt");
    for (int V : {257, 65536, 65537, 100000}) {
        std::string path = dir + "/s" + std::to_string(V) + ".bin";
        ShardWriter w(path, V, V - 1);
        std::vector<std::int32_t> a = {1, 2, V - 1}, b = {}, c = {V - 2, 0, 7, V - 1};
        w.add_document(a);
        w.add_document(b);
        w.add_document(c);
        w.finish();
        ShardReader r(path);
        EXPECT_EQ(r.token_bytes(), V <= 65536 ? 2 : 4);
        EXPECT_EQ(shard_token_bytes(V), r.token_bytes());
        EXPECT_EQ(r.vocab_size(), V);
        EXPECT_EQ(r.eot_id(), V - 1);
        EXPECT_EQ(r.documents(), 3u);
        EXPECT_EQ(r.tokens(), 7u);
        EXPECT_EQ(r.doc_offset(1), 3u);
        EXPECT_EQ(r.doc_offset(2), 3u);
        EXPECT_EQ(r.doc_offset(3), 7u);
        std::vector<std::int32_t> all(7);
        r.copy_tokens(0, 7, all.data());
        EXPECT_EQ(all, (std::vector<std::int32_t>{1, 2, V - 1, V - 2, 0, 7, V - 1}));
        EXPECT_EQ(r.token(3), V - 2);
        EXPECT_EQ(fs::file_size(path), 64u + 8u * 4u + r.token_bytes() * 7u);
    }
}

TEST(Shard, TruncatedPaddedAndForeignFilesAreRefused) {
    auto dir = test::temp_dir("shard_bad");
    {
        ShardWriter w(dir + "/ok.bin", 257, 256);
        w.add_document(std::vector<std::int32_t>{10, 20, 30, 256});
        w.finish();
    }
    std::string ok = test::read_file(dir + "/ok.bin");
    test::write_file(dir + "/trunc.bin", ok.substr(0, ok.size() - 1));
    std::string e = error_of(dir + "/trunc.bin");
    EXPECT_NE(e.find(dir + "/trunc.bin"), std::string::npos) << e;
    EXPECT_NE(e.find("truncated"), std::string::npos) << e;
    test::write_file(dir + "/tiny.bin", ok.substr(0, 10));
    EXPECT_NE(error_of(dir + "/tiny.bin").find("truncated"), std::string::npos);
    test::write_file(dir + "/padded.bin", ok + "xx");
    EXPECT_NE(error_of(dir + "/padded.bin").find("trailing"), std::string::npos);
    test::write_file(dir + "/foreign.bin", std::string(200, 'A'));
    EXPECT_NE(error_of(dir + "/foreign.bin").find("not a meshlm token shard"), std::string::npos);
    std::string v2 = ok;
    v2[8] = 2;
    test::write_file(dir + "/v2.bin", v2);
    EXPECT_NE(error_of(dir + "/v2.bin").find("version 2"), std::string::npos);
    EXPECT_NE(error_of(dir + "/missing.bin").find("cannot open"), std::string::npos);
}

TEST(Shard, UnfinishedWriterLeavesNothing) {
    auto dir = test::temp_dir("shard_unfinished");
    {
        ShardWriter w(dir + "/s.bin", 257, 256);
        w.add_document(std::vector<std::int32_t>{1, 2, 256});
    }
    EXPECT_TRUE(fs::is_empty(dir));
}

TEST(Prepare, WritesSplitsShardsAndMeta) {
    auto dir = test::temp_dir("prep");
    std::string in;
    for (int i = 0; i < 100; ++i)
        in += "{\"text\": \"document number " + std::to_string(i) + "\"}\n";
    test::write_file(dir + "/in.jsonl", in);
    ByteTokenizer tok;
    PrepareOptions opt;
    opt.progress = false;
    opt.val_fraction = 0.1;
    opt.test_fraction = 0.05;
    opt.shard_tokens = 500;
    opt.threads = 2;
    PreparedMeta m = prepare_corpus({dir + "/in.jsonl"}, opt, tok, dir + "/out");
    EXPECT_EQ(m.splits["val"].documents, 10u);
    EXPECT_EQ(m.splits["test"].documents, 5u);
    EXPECT_EQ(m.splits["train"].documents, 85u);
    EXPECT_GT(m.splits["train"].shards.size(), 1u);
    std::uint64_t tokens = 0, docs = 0;
    for (const auto& [name, s] : m.splits)
        for (const auto& sh : s.shards) {
            ShardReader r(dir + "/out/" + sh.file);
            EXPECT_EQ(r.documents(), sh.documents);
            EXPECT_EQ(r.tokens(), sh.tokens);
            EXPECT_LE(r.tokens(), 500u);
            for (std::uint64_t d = 0; d < r.documents(); ++d)
                EXPECT_EQ(r.token(r.doc_offset(d + 1) - 1), tok.eot_id());  // eot after each
            tokens += r.tokens(), docs += r.documents();
        }
    EXPECT_EQ(docs, 100u);
    EXPECT_EQ(tokens, in.size() - 100 * std::string("{\"text\": \"\"}\n").size() + 100);
    auto meta = nlohmann::json::parse(test::read_file(dir + "/out/meta.json"));
    EXPECT_EQ(meta["tokenizer"]["name"], "byte");
    EXPECT_EQ(meta["token_dtype"], "uint16");
    EXPECT_EQ(meta["split"]["seed"], 1234);
    EXPECT_EQ(meta["meshlm_version"], MESHLM_VERSION);
    EXPECT_EQ(meta["stats"]["documents"], 100);
    EXPECT_EQ(read_prepared_meta(dir + "/out").splits["val"].tokens, m.splits["val"].tokens);

    // Deterministic whatever the thread count; a different seed gives a different split.
    opt.threads = 1;
    prepare_corpus({dir + "/in.jsonl"}, opt, tok, dir + "/out1");
    for (const auto& sh : m.splits["val"].shards)
        EXPECT_EQ(test::read_file(dir + "/out/" + sh.file),
                  test::read_file(dir + "/out1/" + sh.file));
    opt.seed = 99;
    prepare_corpus({dir + "/in.jsonl"}, opt, tok, dir + "/out2");
    EXPECT_NE(test::read_file(dir + "/out/val_000000.bin"),
              test::read_file(dir + "/out2/val_000000.bin"));
}

// enwik8's split (seed 001): by position, not by document -- the first bytes train, the next
// validate, the next test, each split the file's bytes in order with no end-of-text token.
TEST(Prepare, SplitsAFileOfBytesByPosition) {
    auto dir = test::temp_dir("prep_bytes");
    std::string in;
    Philox rng(3, 0);
    for (int i = 0; i < 1000; ++i) in += static_cast<char>(static_cast<int>(rng.uniform() * 256));
    test::write_file(dir + "/enwik", in);
    ByteTokenizer tok;
    const std::uint64_t bytes[3] = {800, 150, 40};
    PreparedMeta m = prepare_byte_splits(dir + "/enwik", bytes, tok, dir + "/out");
    std::size_t at = 0;
    for (int s = 0; s < 3; ++s) {
        const char* name = s == 0 ? "train" : s == 1 ? "val" : "test";
        ASSERT_EQ(m.splits[name].tokens, bytes[s]) << name;
        ASSERT_EQ(m.splits[name].shards.size(), 1u) << name;
        ShardReader r(dir + "/out/" + m.splits[name].shards[0].file);
        ASSERT_EQ(r.tokens(), bytes[s]);
        for (std::uint64_t t = 0; t < r.tokens(); ++t, ++at)
            ASSERT_EQ(r.token(t), static_cast<std::uint8_t>(in[at])) << name << " byte " << t;
    }
    EXPECT_EQ(read_prepared_meta(dir + "/out").splits["test"].tokens, 40u);
    // Longer than the file, or another tokenizer: refused, naming the sizes.
    const std::uint64_t too_many[3] = {900, 100, 1};
    try {
        prepare_byte_splits(dir + "/enwik", too_many, tok, dir + "/out2");
        ADD_FAILURE() << "accepted 1001 bytes of 1000";
    } catch (const InvalidInput& e) {
        EXPECT_NE(std::string(e.what()).find("1001 bytes"), std::string::npos) << e.what();
    }
}

TEST(Prepare, InterruptedPrepareLeavesNothingFinished) {
    auto dir = test::temp_dir("prep_fail");
    test::write_file(dir + "/in/a.jsonl", "");
    fs::create_directories(dir + "/in");
    test::write_file(dir + "/in/a.jsonl", "{\"text\": \"fine\"}\n{\"text\": \"fine too\"}\n");
    test::write_file(dir + "/in/b.jsonl", "{\"text\": \"ok\"}\n{broken\n");
    // An earlier finished prepare in the same directory is invalidated first.
    ByteTokenizer tok;
    PrepareOptions opt;
    opt.progress = false;
    prepare_corpus({dir + "/in/a.jsonl"}, opt, tok, dir + "/out");
    ASSERT_TRUE(is_prepared_dir(dir + "/out"));
    try {
        prepare_corpus({dir + "/in"}, opt, tok, dir + "/out");
        FAIL() << "expected a malformed-JSONL error";
    } catch (const InvalidInput& e) {
        EXPECT_NE(std::string(e.what()).find("b.jsonl:2"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(is_prepared_dir(dir + "/out"));
    EXPECT_TRUE(fs::is_empty(dir + "/out"));  // no shards, no temporaries
    EXPECT_THROW(read_prepared_meta(dir + "/out"), InvalidInput);
}

TEST(Prepare, TokenizerMismatchIsRefused) {
    auto dir = test::temp_dir("prep_tok");
    test::write_file(dir + "/in.txt", "a\n%\nb\n%\nc\n");
    ByteTokenizer tok;
    PrepareOptions opt;
    opt.progress = false;
    opt.read.separator = "%";
    prepare_corpus({dir + "/in.txt"}, opt, tok, dir + "/out");
    EXPECT_NO_THROW(check_prepared_tokenizer(dir + "/out", tok, "byte"));
    WideTokenizer wide(70000);
    try {
        check_prepared_tokenizer(dir + "/out", wide, "wide");
        FAIL() << "expected a tokenizer mismatch";
    } catch (const InvalidInput& e) {
        EXPECT_NE(std::string(e.what()).find("prepared with tokenizer 'byte'"), std::string::npos)
            << e.what();
    }
    // A large vocabulary gives uint32 shards.
    prepare_corpus({dir + "/in.txt"}, opt, wide, dir + "/wide");
    EXPECT_EQ(read_prepared_meta(dir + "/wide").token_bytes, 4);
    EXPECT_EQ(ShardReader(dir + "/wide/train_000000.bin").token_bytes(), 4);
}

TEST(Prepare, TooFewDocumentsOrEmptyCorpus) {
    auto dir = test::temp_dir("prep_few");
    test::write_file(dir + "/one.txt", "just one document");
    test::write_file(dir + "/empty.jsonl", "\n");
    ByteTokenizer tok;
    PrepareOptions opt;
    opt.progress = false;
    EXPECT_THROW(prepare_corpus({dir + "/one.txt"}, opt, tok, dir + "/out"), InvalidInput);
    EXPECT_THROW(prepare_corpus({dir + "/empty.jsonl"}, opt, tok, dir + "/out"), InvalidInput);
    opt.val_fraction = 0;
    EXPECT_NO_THROW(prepare_corpus({dir + "/one.txt"}, opt, tok, dir + "/out"));
}

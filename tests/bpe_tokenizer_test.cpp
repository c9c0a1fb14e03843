// Byte-level BPE (the .tiktoken BpeTokenizer and GPT-2-style tokenizer.json files through the HF
// pipeline) and the GPT-2 pre-tokenizer against ids produced by HF tokenizers and tiktoken
// (fixtures from tools/reference/tokenizer_reference.py).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "meshlm/core/error.h"
#include "meshlm/data/bpe_tokenizer.h"
#include "meshlm/data/hf/hf_tokenizer.h"
#include "meshlm/data/pretokenize.h"
#include "meshlm/data/unicode_categories.h"
#include "test_util.h"

namespace meshlm {
namespace {

std::string tok_fixture(const std::string& name) {
    return test::fixture("tokenizers/" + name);
}

std::string read_all(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// The corpus lines, then the whole corpus as one more entry (the .ids files' last row).
std::vector<std::string> corpus() {
    const std::string all = read_all(tok_fixture("corpus.txt"));
    std::vector<std::string> lines;
    std::size_t pos = 0;
    while (pos < all.size()) {
        const std::size_t eol = all.find('\n', pos);
        lines.push_back(all.substr(pos, eol - pos));
        pos = eol + 1;
    }
    lines.push_back(all);
    return lines;
}

std::vector<std::vector<std::int32_t>> expected_ids(const std::string& name) {
    std::ifstream f(tok_fixture(name));
    std::vector<std::vector<std::int32_t>> rows;
    std::string line;
    while (std::getline(f, line)) {
        if (!line.empty() && line[0] == '#') continue;
        std::istringstream ss(line);
        std::vector<std::int32_t> ids;
        for (std::int32_t id; ss >> id;) ids.push_back(id);
        rows.push_back(ids);
    }
    return rows;
}

void expect_matches(const std::vector<std::vector<std::int32_t>>& want,
                    const std::function<std::vector<std::int32_t>(std::string_view)>& enc) {
    const auto lines = corpus();
    ASSERT_EQ(want.size(), lines.size());
    for (std::size_t i = 0; i < lines.size(); ++i)
        EXPECT_EQ(enc(lines[i]), want[i]) << "corpus line " << i + 1 << ": " << lines[i];
}

std::vector<std::string> pieces(std::string_view s) {
    std::vector<std::string> out;
    for (auto p : gpt2_pretokenize(s)) out.emplace_back(p);
    return out;
}

using V = std::vector<std::string>;

TEST(Pretokenize, TrickyCases) {
    EXPECT_EQ(pieces("  hello"), (V{" ", " hello"}));
    EXPECT_EQ(pieces("x  \n\n y"), (V{"x", "  \n\n", " y"}));
    EXPECT_EQ(pieces("'s"), (V{"'s"}));
    EXPECT_EQ(pieces("don't"), (V{"don", "'t"}));
    EXPECT_EQ(pieces("DON'T"), (V{"DON", "'", "T"}));
    EXPECT_EQ(pieces("we'll they're"), (V{"we", "'ll", " they", "'re"}));
    EXPECT_EQ(pieces("123abc"), (V{"123", "abc"}));
    EXPECT_EQ(pieces("a\u00a0b"), (V{"a", "\u00a0", "b"}));
    EXPECT_EQ(pieces("hello world  "), (V{"hello", " world", "  "}));
    EXPECT_EQ(pieces("a\nb"), (V{"a", "\n", "b"}));
    EXPECT_EQ(pieces(" !? x"), (V{" !?", " x"}));
    EXPECT_EQ(pieces("caf\xc3\xa9 \xff\xfe!x"), (V{"caf\xc3\xa9", " \xff\xfe!", "x"}));
    EXPECT_EQ(pieces("\xe2\x82 a"), (V{"\xe2\x82", " a"}));
    EXPECT_EQ(pieces(""), V{});
}

TEST(Unicode, Classes) {
    using unicode::CharClass;
    EXPECT_EQ(unicode::classify(U'é'), CharClass::Letter);
    EXPECT_EQ(unicode::classify(U'日'), CharClass::Letter);
    EXPECT_EQ(unicode::classify(U'½'), CharClass::Number);
    EXPECT_EQ(unicode::classify(0x3000), CharClass::Space);
    EXPECT_EQ(unicode::classify(0x200B), CharClass::Other);  // zero width space: not White_Space
    EXPECT_EQ(unicode::classify(0x1C), CharClass::Other);    // not White_Space (Python isspace)
    EXPECT_EQ(unicode::classify(0x1F600), CharClass::Other);
    EXPECT_EQ(unicode::classify(0x105C0), CharClass::Letter);  // Todhri, Unicode 16
}

TEST(BpeTokenizer, HfLegacyMerges) {
    auto t = HfTokenizer::from_file(tok_fixture("bpe_merges_legacy.json"));
    expect_matches(expected_ids("bpe.ids"), [&](std::string_view s) { return t->encode(s); });
}

TEST(BpeTokenizer, HfPairMerges) {
    auto t = HfTokenizer::from_file(tok_fixture("bpe_merges_pairs.json"));
    expect_matches(expected_ids("bpe.ids"), [&](std::string_view s) { return t->encode(s); });
    EXPECT_EQ(t->vocab_size(), 1500);
    EXPECT_EQ(t->eot_id(), *t->token_id("<|endoftext|>"));
}

TEST(BpeTokenizer, HfSplitSequence) {
    auto t = HfTokenizer::from_file(tok_fixture("bpe_split_sequence.json"));
    expect_matches(expected_ids("bpe.ids"), [&](std::string_view s) { return t->encode(s); });
}

TEST(BpeTokenizer, HfAddPrefixSpace) {
    auto t = HfTokenizer::from_file(tok_fixture("bpe_prefix_space.json"));
    expect_matches(expected_ids("bpe_prefix_space.ids"),
                   [&](std::string_view s) { return t->encode(s); });
}

TEST(BpeTokenizer, TiktokenGpt2) {
    auto t = make_tokenizer(tok_fixture("gpt2.tiktoken"));
    auto* b = dynamic_cast<BpeTokenizer*>(t.get());
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(t->vocab_size(), 50257);
    EXPECT_EQ(t->eot_id(), 50256);
    expect_matches(expected_ids("gpt2_ordinary.ids"),
                   [&](std::string_view s) { return t->encode(s); });
    expect_matches(expected_ids("gpt2_special.ids"),
                   [&](std::string_view s) { return b->encode_with_special(s); });
}

TEST(BpeTokenizer, RoundTripsAllLines) {
    for (const char* spec : {"bpe_merges_pairs.json", "bpe_prefix_space.json", "gpt2.tiktoken"}) {
        auto t = make_tokenizer(tok_fixture(spec));
        const bool prefix = std::string(spec) == "bpe_prefix_space.json";
        for (const auto& line : corpus()) {
            std::string got = t->decode(t->encode(line));
            // Special tokens decode to nothing; add_prefix_space adds a leading space.
            std::string want = line;
            for (std::size_t p; (p = want.find("<|endoftext|>")) != std::string::npos;)
                want.erase(p, 13);
            if (prefix) {  // add_prefix_space: a leading space when there is none
                if (line.find("<|endoftext|>") != std::string::npos) continue;
                if (!line.empty() && line[0] != ' ') want = " " + line;
            }
            if (std::string(spec) == "gpt2.tiktoken") want = line;  // encode is ordinary
            EXPECT_EQ(got, want) << spec;
        }
    }
}

TEST(BpeTokenizer, AddedTokens) {
    auto t = HfTokenizer::from_file(tok_fixture("bpe_merges_pairs.json"));
    const std::int32_t eot = t->eot_id();
    auto ids = t->encode("a<|endoftext|>b");
    ASSERT_EQ(ids.size(), 3u);
    EXPECT_EQ(ids[1], eot);
    EXPECT_EQ(t->decode(ids), "ab");  // special tokens decode to nothing
    auto g = BpeTokenizer::from_tiktoken(tok_fixture("gpt2.tiktoken"));
    EXPECT_EQ(g->encode_with_special("<|endoftext|>"), std::vector<std::int32_t>{50256});
    EXPECT_EQ(g->encode("Hello world"), (std::vector<std::int32_t>{15496, 995}));
}

std::string write_temp(const std::string& name, const std::string& content) {
    const std::string path = test::temp_dir("bpe") + "/" + name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
}

void expect_error(const std::string& path, const std::string& fragment) {
    try {
        make_tokenizer(path);
        FAIL() << "no error for " << path;
    } catch (const InvalidInput& e) {
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
}

TEST(BpeTokenizer, MalformedFiles) {
    const std::string vocab = R"("vocab": {"a": 0, "b": 1, "ab": 2, "<|endoftext|>": 3})";
    const std::string pre = R"("pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false})";
    const std::string added =
        R"("added_tokens": [{"id": 3, "content": "<|endoftext|>", "special": true}])";
    auto json = [&](const std::string& model) {
        return "{" + added + ", " + pre + R"(, "normalizer": null, "model": )" + model + "}";
    };
    expect_error(write_temp("wl.json", json(R"({"type": "WordLevel", )" + vocab + "}")),
                 "model: model type \"WordLevel\" is not supported; supported: BPE, Unigram");
    expect_error(
        write_temp("bad.json", json(R"({"type": "BPE", )" + vocab + R"(, "merges": ["a b c"]})")),
        "model.merges[0]: \"a b c\": expected two tokens");
    expect_error(write_temp("miss.json",
                            json(R"({"type": "BPE", )" + vocab + R"(, "merges": [["a", "c"]]})")),
                 "token \"c\" is not in the vocab");
    expect_error(write_temp("novocab.json", json(R"({"type": "BPE", "merges": []})")),
                 "model.vocab: expected an object");
    expect_error(write_temp("trunc.json", "{\"model\": "), "not valid JSON");
    expect_error(write_temp("x.tiktoken", "YQ== 0\nnot-base64! 1\n"), "invalid base64");
    expect_error(write_temp("y.tiktoken", "YQ== zero\n"), "bad rank");
    // A valid minimal file loads.
    auto ok = make_tokenizer(
        write_temp("ok.json", json(R"({"type": "BPE", )" + vocab + R"(, "merges": ["a b"]})")));
    EXPECT_EQ(ok->encode("ab"), std::vector<std::int32_t>{2});
    EXPECT_THROW(make_tokenizer("/nonexistent/tokenizer.json"), InvalidInput);
    EXPECT_THROW(make_tokenizer("gpt3"), InvalidInput);
}

}  // namespace
}  // namespace meshlm

// HfTokenizer (data/hf/) against HF tokenizers 0.23, exact: ids with and without the
// post-processor and decoded text, for every family configuration and every corpus line
// (fixtures: tools/reference/hf_tokenizer_families.py). Also meshlm's invalid-UTF-8 rule, the
// GPT-2 scanner against PCRE2, tokenizer_config.json's add_bos_token and refusals by name.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "meshlm/core/error.h"
#include "meshlm/data/hf/hf_tokenizer.h"
#include "meshlm/data/hf/regex.h"
#include "meshlm/data/hf/unicode_norm.h"
#include "meshlm/data/pretokenize.h"
#include "test_util.h"

namespace meshlm {
namespace {

using nlohmann::json;

const json& expected() {
    static const json j =
        json::parse(test::read_file(test::fixture("tokenizers/hf/expected.json")));
    return j;
}

std::string family_path(const std::string& name) {
    return test::fixture("tokenizers/hf/" + name + ".json");
}

std::vector<std::string> invalid_lines() {
    std::vector<std::string> out;
    for (const auto& h : expected()["invalid_utf8_hex"]) {
        const std::string hex = h.get<std::string>();
        std::string s;
        for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
            s.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
        out.push_back(s);
    }
    return out;
}

class Families : public ::testing::TestWithParam<std::string> {};

TEST_P(Families, MatchHfTokenizersOnEveryLine) {
    const auto tok = HfTokenizer::from_file(family_path(GetParam()));
    const json& lines = expected()["lines"];
    const json& rows = expected()["families"][GetParam()];
    ASSERT_EQ(lines.size(), rows.size());
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string text = lines[i].get<std::string>();
        const auto ids = rows[i]["ids"].get<std::vector<std::int32_t>>();
        EXPECT_EQ(tok->encode(text), ids) << GetParam() << " line " << i << ": " << text;
        EXPECT_EQ(tok->encode_for_model(text),
                  rows[i]["ids_model"].get<std::vector<std::int32_t>>())
            << GetParam() << " line " << i;
        EXPECT_EQ(tok->decode(ids), rows[i]["decoded"].get<std::string>())
            << GetParam() << " line " << i;
    }
}

// Invalid UTF-8 (meshlm's rule, docs/tokenizers-and-data.md): never an error; an invalid byte is
// a character of its own that normalizers keep; byte-level and byte-fallback models encode it as
// its byte, so their decode gives the input back (Metaspace "first" decoding drops the leading
// spaces, as HF's does).
TEST_P(Families, InvalidUtf8) {
    const auto tok = HfTokenizer::from_file(family_path(GetParam()));
    static const std::set<std::string> lossless = {"gpt2", "llama3", "qwen2",
                                                   "neox", "llama2", "mistral"};
    auto drop_lead = [&](std::string t) {
        if (GetParam() == "mistral") t.erase(0, t.find_first_not_of(' '));
        return t;
    };
    for (const std::string& s : invalid_lines()) {
        std::vector<std::int32_t> ids;
        ASSERT_NO_THROW(ids = tok->encode(s)) << GetParam();
        for (const auto id : ids) EXPECT_LT(id, tok->vocab_size());
        if (lossless.count(GetParam())) {
            EXPECT_EQ(drop_lead(tok->decode(ids)), drop_lead(s)) << GetParam();
        }
    }
}

INSTANTIATE_TEST_SUITE_P(HfTokenizer, Families,
                         ::testing::Values("gpt2", "gpt2_prefix_space", "llama3", "qwen2", "neox",
                                           "llama2", "mistral", "unigram", "unigram_byte_fallback",
                                           "wordpiece", "misc", "splits"));

// The hand-written GPT-2 scanner (the fast path) cuts every line exactly as PCRE2 does.
TEST(HfTokenizer, Gpt2ScannerMatchesPcre2) {
    const hf::Regex re(std::string(kGpt2Pattern), "test");
    std::vector<std::string> texts = invalid_lines();
    for (const auto& l : expected()["lines"]) texts.push_back(l.get<std::string>());
    for (const std::string& t : texts) {
        std::vector<std::string_view> regex;
        for (const auto& [b, e] : re.find_all(t))
            regex.push_back(std::string_view(t).substr(b, e - b));
        EXPECT_EQ(gpt2_pretokenize(t), regex) << t;
    }
}

TEST(HfTokenizer, Normalization) {
    using hf::NormForm;
    EXPECT_EQ(hf::unicode_normalize("e\u0301", NormForm::NFC), "\u00e9");
    EXPECT_EQ(hf::unicode_normalize("\u00e9", NormForm::NFD), "e\u0301");
    EXPECT_EQ(hf::unicode_normalize("\u1112\u1161\u11ab", NormForm::NFC), "\ud55c");
    EXPECT_EQ(hf::unicode_normalize("\ufb01", NormForm::NFKC), "fi");
    EXPECT_EQ(hf::unicode_normalize("a\u0323\u0302", NormForm::NFD), "a\u0323\u0302");
    EXPECT_EQ(hf::unicode_normalize("a\u0302\u0323", NormForm::NFD), "a\u0323\u0302");
    EXPECT_EQ(hf::unicode_normalize("\xff\xc3\xa9", NormForm::NFD),
              "\xff"
              "e\u0301");
    EXPECT_EQ(hf::unicode_lowercase("\u0130\u03a3A"), "i\u0307\u03c3a");
}

// tokenizer_config.json's add_bos_token / add_eos_token rebuild the template for the Llama
// classes (as transformers 4.x did) and are ignored for others (as transformers does).
TEST(HfTokenizer, ConfigAddBosToken) {
    const std::string text = test::read_file(family_path("llama2"));
    const auto plain = HfTokenizer::from_json(text, "llama2")->encode("hello");
    auto with = [&](const std::string& cfg) {
        return HfTokenizer::from_json(text, "llama2", cfg)->encode_for_model("hello");
    };
    std::vector<std::int32_t> bos = {1}, eos = plain;
    bos.insert(bos.end(), plain.begin(), plain.end());
    eos.push_back(2);
    EXPECT_EQ(with("{}"), bos);  // the file's TemplateProcessing: <s> $A
    EXPECT_EQ(with(R"({"tokenizer_class": "LlamaTokenizerFast", "add_bos_token": false,
        "add_eos_token": true, "bos_token": "<s>", "eos_token": "</s>"})"),
              eos);
    EXPECT_EQ(with(R"({"tokenizer_class": "PreTrainedTokenizerFast", "add_bos_token": false})"),
              bos);
}

void expect_refused(const json& j, const std::string& fragment) {
    const std::string path = test::temp_dir("hf_refuse") + "/tokenizer.json";
    std::ofstream(path, std::ios::binary) << j.dump();
    try {
        make_tokenizer(path);
        FAIL() << "no error for " << j.dump();
    } catch (const InvalidInput& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
        EXPECT_NE(msg.find(path), std::string::npos) << msg;
    }
}

TEST(HfTokenizer, RefusesUnsupportedComponentsByName) {
    json base = json::parse(test::read_file(family_path("gpt2")));
    json j = base;
    j["normalizer"] = {{"type", "BertNormalizer"}};
    expect_refused(
        j, "normalizer: normalizer type \"BertNormalizer\" is not supported; supported: NFC");
    j = base;
    j["normalizer"] = {{"type", "Sequence"},
                       {"normalizers", {{{"type", "NFC"}}, {{"type", "Precompiled"}}}}};
    expect_refused(j, "normalizer.normalizers[1]: normalizer type \"Precompiled\"");
    j = base;
    j["pre_tokenizer"] = {{"type", "Sequence"},
                          {"pretokenizers", {{{"type", "Digits"}}, {{"type", "UnicodeScripts"}}}}};
    expect_refused(j, "pre_tokenizer.pretokenizers[1]: pre_tokenizer type \"UnicodeScripts\"");
    j = base;
    j["pre_tokenizer"] = {{"type", "Sequence"},
                          {"pretokenizers", {{{"type", "ByteLevel"}}, {{"type", "Digits"}}}}};
    expect_refused(j, "ByteLevel must be last");
    j = base;
    j["decoder"] = {{"type", "CTC"}};
    expect_refused(j, "decoder: decoder type \"CTC\" is not supported");
    j = base;
    j["post_processor"] = {{"type", "Foo"}};
    expect_refused(j, "post_processor: post_processor type \"Foo\"");
    j = base;
    j["model"]["type"] = "WordLevel";
    expect_refused(j, "model: model type \"WordLevel\" is not supported");
    j = base;
    j["model"]["dropout"] = 0.1;
    expect_refused(j, "model.dropout: BPE dropout is not supported");
    j = base;
    j["model"]["continuing_subword_prefix"] = "##";
    expect_refused(j, "model.continuing_subword_prefix: is not supported");
    j = base;
    j["pre_tokenizer"] = {
        {"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
    expect_refused(j, "pre_tokenizer.pattern: regex \"(unclosed\" does not compile");
}

}  // namespace
}  // namespace meshlm

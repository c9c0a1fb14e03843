// The tokenizer files `meshlm convert` carries between Hugging Face directories and run
// directories (io/hf_tokenizer_files.h), and the byte tokenizer as a tokenizer.json
// (data/byte_tokenizer_json.h) against what HF `tokenizers` saves and encodes
// (tools/reference/byte_tokenizer_reference.py), and in transformers' AutoTokenizer
// (tests/convert/hf_tokenizer_check.py, with the .venv of scripts/test.sh).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "meshlm/cli/config.h"
#include "meshlm/core/buffer.h"
#include "meshlm/data/byte_tokenizer_json.h"
#include "meshlm/data/chat_template.h"
#include "meshlm/data/tokenizer.h"
#include "meshlm/io/hf_model.h"
#include "meshlm/model/transformer_layout.h"
#include "serve_fixture.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace meshlm {
namespace {

using json = nlohmann::json;

std::string tok_fixture(const std::string& name) {
    return test::fixture("tokenizers/" + name);
}

test::CommandResult convert(const std::string& args) {
    return test::run_command(test::meshlm_binary() + " convert " + args);
}

// transformers' AutoTokenizer on an export, against `meshlm tokenize --tokenizer spec`.
void expect_transformers_agree(const std::string& dir, const std::string& spec,
                               const std::string& eot, int eot_id) {
    const std::string py = test::venv_python();
    ASSERT_FALSE(py.empty()) << "no .venv: run scripts/test.sh";
    ASSERT_EQ(test::run_command(py + " -c 'import transformers'").exit_code, 0)
        << "transformers is not in .venv: run scripts/test.sh";
    auto r =
        test::run_command(py + " " + test::source_dir() + "/tests/convert/hf_tokenizer_check.py " +
                          dir + " " + test::meshlm_binary() + " " + spec + " " +
                          tok_fixture("corpus.txt") + " '" + eot + "' " + std::to_string(eot_id));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("1 passed, 0 failed"), std::string::npos) << r.output;
    std::printf("%s", r.output.c_str());
}

TEST(ByteTokenizerJson, IsTheFileHfTokenizersSaves) {
    EXPECT_EQ(byte_tokenizer_json(), test::read_file(tok_fixture("byte_tokenizer.json")));
    EXPECT_TRUE(is_byte_tokenizer_json(tok_fixture("byte_tokenizer.json")));
    EXPECT_FALSE(is_byte_tokenizer_json(tok_fixture("bpe_trained.json")));
    EXPECT_FALSE(is_byte_tokenizer_json(tok_fixture("no_such.json")));
}

// HF's ids for every valid UTF-8 line of the corpus are meshlm's byte tokenizer's.
TEST(ByteTokenizerJson, HfIdsAreTheByteTokenizers) {
    const std::string all = test::read_file(tok_fixture("corpus.txt"));
    std::vector<std::string> lines;
    for (std::size_t pos = 0; pos < all.size();) {
        const std::size_t eol = all.find('\n', pos);
        lines.push_back(all.substr(pos, eol - pos));
        pos = eol + 1;
    }
    std::ifstream f(tok_fixture("byte.ids"));
    std::string row;
    std::size_t i = 0, compared = 0;
    ByteTokenizer tok;
    while (std::getline(f, row)) {
        if (row.starts_with("#")) continue;
        ASSERT_LT(i, lines.size());
        if (row != "-") {
            std::istringstream ss(row);
            std::vector<std::int32_t> want;
            for (std::int32_t id; ss >> id;) want.push_back(id);
            EXPECT_EQ(tok.encode(lines[i]), want) << "corpus line " << i + 1;
            ++compared;
        }
        ++i;
    }
    EXPECT_EQ(i, lines.size());
    EXPECT_GE(compared, 40u);
}

// A byte-level run exports the byte tokenizer with BOS, EOS and pad set; importing the export
// gives a byte-level run again, with the files carried, and exporting that gives them back.
TEST(HfTokenizerFiles, ByteRunRoundTrips) {
    const std::string tmp = test::temp_dir("hf_tok_byte");
    auto r =
        convert("--from meshlm --to hf " + test::fixture("meshlm_tiny_run") + " " + tmp + "/hf");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("tokenizer.json of the byte tokenizer written"), std::string::npos)
        << r.output;
    EXPECT_EQ(test::read_file(tmp + "/hf/tokenizer.json"), byte_tokenizer_json());
    const json cfg = json::parse(test::read_file(tmp + "/hf/tokenizer_config.json"));
    for (const char* key : {"bos_token", "eos_token", "pad_token"})
        EXPECT_EQ(cfg[key], "<|endoftext|>");
    EXPECT_EQ(cfg["chat_template"], ChatTemplate::fallback_source());
    EXPECT_EQ(cfg["split_special_tokens"], true);
    EXPECT_EQ(cfg["model_max_length"], 32);
    EXPECT_EQ(json::parse(test::read_file(tmp + "/hf/special_tokens_map.json")),
              json({{"bos_token", "<|endoftext|>"},
                    {"eos_token", "<|endoftext|>"},
                    {"pad_token", "<|endoftext|>"}}));

    r = convert("--from hf --to meshlm " + tmp + "/hf " + tmp + "/run");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("tokenizer: byte; also copied: tokenizer_config.json, "
                            "special_tokens_map.json, generation_config.json"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(load_config(tmp + "/run/config.yaml", {}).data.tokenizer, "byte");
    EXPECT_FALSE(fs::exists(tmp + "/run/tokenizer.json"));
    r = convert("--from meshlm --to hf " + tmp + "/run " + tmp + "/hf2");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                          "generation_config.json"})
        EXPECT_EQ(test::read_file(tmp + "/hf2/" + f), test::read_file(tmp + "/hf/" + f)) << f;
    expect_transformers_agree(tmp + "/hf", "byte", "<|endoftext|>", 256);
}

// A GPT-2 shaped HF directory of vocab 512 with `tokenizer` (a tokenizer.json) beside it.
std::string write_hf_gpt2(const std::string& dir, const std::string& tokenizer,
                          int vocab_size = 512) {
    ModelConfig m;
    m.n_layer = 1;
    m.d_model = 16;
    m.n_head = 2;
    m.vocab_size = vocab_size;
    m.max_seq_len = 32;
    const ParamLayout layout = transformer_layout(m);
    Buffer<float> params(layout.total());
    init_params(m, layout, params.data(), 3);
    HfExportOptions opt;
    opt.eot_id = 0;
    write_hf_model(dir, m, layout, params.data(), opt);
    fs::copy_file(tokenizer, dir + "/tokenizer.json");
    return dir;
}

// An HF model's own tokenizer files go into the run and come back out byte for byte; the chat
// template is the one the run then serves.
TEST(HfTokenizerFiles, HfModelsFilesRoundTrip) {
    const std::string tmp = test::temp_dir("hf_tok_carry");
    const std::string hf = write_hf_gpt2(tmp + "/hf", tok_fixture("bpe_trained.json"));
    fs::copy_file(test::fixture("chat_templates/smollm2/tokenizer_config.json"),
                  hf + "/tokenizer_config.json");
    test::write_file(hf + "/special_tokens_map.json", "{\"eos_token\": \"<|im_end|>\"}\n");
    test::write_file(hf + "/generation_config.json", "{\"eos_token_id\": [0, 5]}\n");
    auto r = convert("--from hf --to meshlm " + hf + " " + tmp + "/run");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                          "generation_config.json"})
        EXPECT_TRUE(fs::exists(tmp + "/run/" + f)) << f;
    r = convert("--from meshlm --to hf " + tmp + "/run " + tmp + "/hf2");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("tokenizer.json copied, tokenizer_config.json copied, "
                            "special_tokens_map.json copied"),
              std::string::npos)
        << r.output;
    for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                          "generation_config.json"})
        EXPECT_EQ(test::read_file(tmp + "/hf2/" + f), test::read_file(hf + "/" + f)) << f;
    // `serve` and `sample --chat` find the template in the run.
    r = test::run_command("echo hi | " + test::meshlm_binary() + " sample --checkpoint " + tmp +
                          "/run --chat --show-prompt --max-new-tokens 2 --temperature 0");
    EXPECT_NE(r.output.find("You are a helpful AI assistant named SmolLM"), std::string::npos)
        << r.output;
}

// A run with a tokenizer.json and no tokenizer_config.json (one meshlm trained) gets one whose
// special tokens are the tokenizer's end of text, and transformers agrees with meshlm on it.
TEST(HfTokenizerFiles, BpeRunGetsItsSpecialTokens) {
    const std::string tmp = test::temp_dir("hf_tok_bpe");
    write_hf_gpt2(tmp + "/hf", tok_fixture("bpe_trained.json"));
    fs::remove(tmp + "/hf/generation_config.json");
    auto r = convert("--from hf --to meshlm " + tmp + "/hf " + tmp + "/run");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = convert("--from meshlm --to hf " + tmp + "/run " + tmp + "/hf2");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const json cfg = json::parse(test::read_file(tmp + "/hf2/tokenizer_config.json"));
    EXPECT_EQ(cfg["eos_token"], "<|endoftext|>");
    EXPECT_FALSE(cfg.contains("split_special_tokens"));
    EXPECT_EQ(json::parse(test::read_file(tmp + "/hf2/generation_config.json"))["eos_token_id"], 0);
    expect_transformers_agree(tmp + "/hf2", tmp + "/run/tokenizer.json", "<|endoftext|>", 0);
}

// A Llama-3 style tokenizer puts BOS before a document (its post-processor's template): a text
// prompt of `/v1/completions` gets it, as in transformers and vLLM; `/tokenize` adds it when
// asked (`add_special_tokens`).
TEST(HfTokenizerFiles, TextPromptsGetTheTokenizersBos) {
    const std::string tmp = test::temp_dir("hf_tok_bos");
    write_hf_gpt2(tmp + "/hf", test::fixture("tokenizers/hf/llama3.json"), 900);
    auto r = convert("--from hf --to meshlm " + tmp + "/hf " + tmp + "/run");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ServeProcess server(tmp + "/run", "", tmp + "/serve.log");
    ASSERT_GT(server.port(), 0);
    const auto post = [&](const std::string& path, const std::string& body) {
        auto res = test::run_command("curl -s " + server.url() + path +
                                     " -H 'Content-Type: application/json' -d '" + body + "'");
        EXPECT_EQ(res.exit_code, 0) << res.output;
        return json::parse(res.output);
    };
    const json plain = post("/tokenize", R"({"prompt": "Hello world"})");
    const json with_bos =
        post("/tokenize", R"({"prompt": "Hello world", "add_special_tokens": true})");
    ASSERT_FALSE(plain["tokens"].empty()) << plain;
    EXPECT_NE(plain["tokens"][0], 0) << plain;  // 0 is <|begin_of_text|>
    json expected = json::array({0});
    for (const auto& id : plain["tokens"]) expected.push_back(id);
    EXPECT_EQ(with_bos["tokens"], expected);
    const json done =
        post("/v1/completions", R"({"prompt": "Hello world", "max_tokens": 1, "temperature": 0})");
    EXPECT_EQ(done["usage"]["prompt_tokens"], expected.size()) << done;
}

TEST(HfTokenizerFiles, BrokenSideFileIsRefusedByName) {
    const std::string tmp = test::temp_dir("hf_tok_broken");
    const std::string hf = write_hf_gpt2(tmp + "/hf", tok_fixture("bpe_trained.json"));
    test::write_file(hf + "/tokenizer_config.json", "{\"chat_template\": ");
    auto r = convert("--from hf --to meshlm " + hf + " " + tmp + "/run");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("tokenizer_config.json: not a JSON object"), std::string::npos)
        << r.output;
    EXPECT_FALSE(fs::exists(tmp + "/run"));
}

}  // namespace
}  // namespace meshlm

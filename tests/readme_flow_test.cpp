// The README's own command sequences, run verbatim (the commands are read from README.md, so
// the test follows the text): prepare a JSONL corpus with a tokenizer.json, train on it, evaluate
// the test split. The run directory keeps a byte-identical copy of the tokenizer, which must
// count as the same tokenizer as the one the data was prepared with.
#include <gtest/gtest.h>
#include <zstd.h>

#include <filesystem>
#include <sstream>

#include "test_util.h"

namespace meshlm {
namespace {

namespace fs = std::filesystem;

// The commands of the README's fenced block that contains `marker`, `\` continuations joined.
std::vector<std::string> readme_block(const std::string& marker) {
    std::istringstream in(test::read_file(test::source_dir() + "/README.md"));
    std::vector<std::string> block;
    bool inside = false;
    for (std::string line; std::getline(in, line);) {
        if (line.starts_with("```")) {
            if (inside) {
                std::string all;
                for (const auto& l : block) all += l + "\n";
                if (all.find(marker) != std::string::npos) return block;
                block.clear();
            }
            inside = !inside;
            continue;
        }
        if (!inside) continue;
        if (!block.empty() && block.back().ends_with("\\")) {
            block.back().pop_back();
            block.back() += line;
        } else {
            block.push_back(line);
        }
    }
    return {};
}

std::string zstd_bytes(const std::string& data) {
    std::string out(ZSTD_compressBound(data.size()), '\0');
    const std::size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3);
    out.resize(ZSTD_isError(n) ? 0 : n);
    return out;
}

TEST(ReadmeFlow, PrepareWithATokenizerJsonThenTrainThenEvalTest) {
    const auto commands = readme_block("prepare --input 'data/*.jsonl.zst'");
    ASSERT_EQ(commands.size(), 3u) << "the README's prepare -> train -> eval block changed";
    const std::string dir = test::temp_dir("readme");
    // What the commands expect to find: data/*.jsonl.zst, tokenizer.json and my.yaml.
    std::string jsonl;
    for (int i = 0; i < 2000; ++i)
        jsonl += "{\"text\": \"document " + std::to_string(i) +
                 ": the quick brown fox jumps over the lazy dog " + std::to_string(i % 7) +
                 " times.\"}\n";
    test::write_file(dir + "/data/a.jsonl.zst", zstd_bytes(jsonl));
    fs::copy_file(test::fixture("tokenizers/bpe_trained.json"), dir + "/tokenizer.json");
    test::write_file(dir + "/my.yaml",
                     "model: {n_layer: 1, d_model: 32, n_head: 2, vocab_size: 512, "
                     "max_seq_len: 32}\n"
                     "train: {steps: 4, batch_size: 4, seq_len: 32, threads: 2, "
                     "peak_gflops: 100}\n"
                     "data: {tokenizer: tokenizer.json}\n"
                     "log: {interval: 2, eval_interval: 0, sample_tokens: 0}\n");
    for (std::string cmd : commands) {
        ASSERT_TRUE(cmd.starts_with("build/meshlm ")) << cmd;
        cmd = "cd " + dir + " && " + test::meshlm_binary() + cmd.substr(12);
        const auto r = test::run_command(cmd);
        ASSERT_EQ(r.exit_code, 0) << cmd << "\n" << r.output;
        if (cmd.find(" eval ") != std::string::npos)
            EXPECT_NE(r.output.find("nats/token"), std::string::npos) << r.output;
    }
}

}  // namespace
}  // namespace meshlm

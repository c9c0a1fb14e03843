// End-to-end checks of the `meshlm` binary: train writes a complete run directory, runs are
// bitwise deterministic, sample honours its flags, info reports the planned sizes, and bad
// configs fail with a clear message and write nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "test_util.h"

namespace meshlm {
namespace {

namespace fs = std::filesystem;

// `--config` for a GPT-2 (configs/tiny-gpt2.yaml, the option table's defaults): `meshlm train`
// without --config trains the default run's recipe, a Transformer-VQ (configs/default.yaml).
std::string gpt2_config() {
    return " --config " + test::source_dir() + "/configs/tiny-gpt2.yaml";
}

// Flags for a quick run of a tiny model.
std::string tiny_run(const std::string& corpus, const std::string& run_dir, int steps) {
    std::ostringstream s;
    s << test::meshlm_binary() << " train" << gpt2_config()
      << " --config.model.n_layer=2 --config.model.d_model=32"
      << " --config.model.n_head=2 --config.model.max_seq_len=32 --config.train.seq_len=32"
      << " --config.train.batch_size=4 --config.train.steps=" << steps
      << " --config.train.threads=2 --config.train.peak_gflops=100"
      << " --config.log.interval=5 --config.log.eval_interval=10 --config.log.sample_tokens=20"
      << " --config.data.path=" << corpus << " --config.log.dir=" << run_dir
      << " --config.data.cache_dir=" << run_dir << "_cache";
    return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

class Cli : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = test::temp_dir("cli");
        corpus_ = test::write_test_corpus(dir_);
    }
    std::string dir_, corpus_;
};

TEST_F(Cli, TrainWritesConfigMetricsAndWeights) {
    std::string run = dir_ + "/run";
    auto r = test::run_command(tiny_run(corpus_, run, 20));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("resolved config:"), std::string::npos);
    EXPECT_NE(r.output.find("val_loss"), std::string::npos);
    EXPECT_NE(r.output.find("sample:"), std::string::npos);
    ASSERT_TRUE(fs::exists(run + "/config.yaml"));
    ASSERT_TRUE(fs::exists(run + "/model.safetensors"));
    EXPECT_NE(test::read_file(run + "/config.yaml").find("d_model: 32"), std::string::npos);

    auto lines = lines_of(test::read_file(run + "/metrics.jsonl"));
    ASSERT_EQ(lines.size(), 4u);  // steps 5, 10, 15, 20
    for (const char* key :
         {"\"step\"", "\"loss\"", "\"lr\"", "\"grad_norm\"", "\"tokens_per_s\"", "\"mfu\""})
        EXPECT_NE(lines[0].find(key), std::string::npos) << key << " missing in " << lines[0];
    EXPECT_EQ(lines[0].find("val_loss"), std::string::npos);  // not an evaluation step
    EXPECT_NE(lines[1].find("\"val_loss\""), std::string::npos);
    EXPECT_NE(lines[3].find("\"val_loss\""), std::string::npos);
    // Learning happened: the last loss is below the first.
    std::regex loss_re("\"loss\": ([0-9.eE+-]+)");
    std::smatch a, b;
    ASSERT_TRUE(std::regex_search(lines[0], a, loss_re));
    ASSERT_TRUE(std::regex_search(lines[3], b, loss_re));
    EXPECT_LT(std::stod(b[1]), std::stod(a[1]));
}

TEST_F(Cli, SameConfigAndSeedGiveBitwiseIdenticalLosses) {
    auto r1 = test::run_command(tiny_run(corpus_, dir_ + "/a", 20));
    auto r2 = test::run_command(tiny_run(corpus_, dir_ + "/b", 20));
    ASSERT_EQ(r1.exit_code, 0) << r1.output;
    ASSERT_EQ(r2.exit_code, 0) << r2.output;
    std::regex loss_re("\"(loss|val_loss|grad_norm)\": ([^,}]+)");
    auto losses = [&](const std::string& path) {
        std::string all, text = test::read_file(path);
        for (std::sregex_iterator it(text.begin(), text.end(), loss_re), end; it != end; ++it)
            all += (*it)[0].str() + "\n";
        return all;
    };
    std::string la = losses(dir_ + "/a/metrics.jsonl"), lb = losses(dir_ + "/b/metrics.jsonl");
    EXPECT_FALSE(la.empty());
    EXPECT_EQ(la, lb);
    EXPECT_EQ(test::read_file(dir_ + "/a/model.safetensors"),
              test::read_file(dir_ + "/b/model.safetensors"));
    // A different seed gives a different run (the check above can fail).
    auto r3 = test::run_command(tiny_run(corpus_, dir_ + "/c", 20) + " --config.train.seed=7");
    ASSERT_EQ(r3.exit_code, 0) << r3.output;
    EXPECT_NE(la, losses(dir_ + "/c/metrics.jsonl"));
}

TEST_F(Cli, SampleIsDeterministicAndGreedyEqualsTopK1) {
    std::string run = dir_ + "/run";
    ASSERT_EQ(test::run_command(tiny_run(corpus_, run, 30)).exit_code, 0);
    auto sample = [&](const std::string& flags) {
        auto r = test::run_command(test::meshlm_binary() + " sample --checkpoint " + run +
                                   " --prompt 'Document 1' --max-new-tokens 24 " + flags);
        EXPECT_EQ(r.exit_code, 0) << r.output;
        return r.output;
    };
    std::string greedy = sample("--temperature 0");
    EXPECT_EQ(greedy.rfind("Document 1", 0), 0u) << greedy;        // the prompt is echoed first
    EXPECT_EQ(greedy.find("note:"), std::string::npos) << greedy;  // it is not empty
    EXPECT_EQ(greedy, sample("--temperature 0 --seed 99"));        // greedy ignores the seed
    EXPECT_EQ(greedy, sample("--temperature 1 --top-k 1 --seed 5"));
    std::string s1 = sample("--temperature 1.5 --seed 1"),
                s2 = sample("--temperature 1.5 --seed 1");
    EXPECT_EQ(s1, s2);
    EXPECT_NE(s1, sample("--temperature 1.5 --seed 2"));
    std::string nucleus = sample("--temperature 1 --top-p 0.000001 --seed 3");
    EXPECT_EQ(nucleus, greedy);  // a tiny nucleus keeps only the most likely token

    auto bad = test::run_command(test::meshlm_binary() + " sample --checkpoint " + dir_ +
                                 "/nonexistent --prompt x");
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.output.find("not a run or checkpoint directory"), std::string::npos)
        << bad.output;
}

// sample --chat: each stdin line is a user turn; the conversation goes through the run's chat
// template (here a line-based one in the run's tokenizer_config.json whose end of turn, its
// eos_token "\n", is one token), and each reply is one line of stdout and part of the next
// turn's prompt.
TEST_F(Cli, SampleChatAnswersEachLineThroughTheRunsTemplate) {
    const std::string run = dir_ + "/chat_run";
    auto tr = test::run_command(tiny_run(corpus_, run, 30) + " --config.model.max_seq_len=128");
    ASSERT_EQ(tr.exit_code, 0) << tr.output;
    test::write_file(
        run + "/tokenizer_config.json",
        R"({"chat_template": "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}", "eos_token": "\n"})");
    auto chat = [&](const std::string& lines, const std::string& flags = "") {
        const std::string prompts = dir_ + "/prompts.txt";
        auto r = test::run_command("(printf '" + lines + "' | " + test::meshlm_binary() +
                                   " sample --checkpoint " + run +
                                   " --chat --show-prompt --temperature 0 --max-new-tokens 24 " +
                                   flags + " 2> " + prompts + ")");
        EXPECT_EQ(r.exit_code, 0) << r.output << test::read_file(prompts);
        return std::make_pair(r.output, test::read_file(prompts));
    };
    const auto [out, prompts] = chat("Document 1\\n\\nDocument 2\\n");  // (a blank line is skipped)
    const std::vector<std::string> replies = lines_of(out);
    ASSERT_EQ(replies.size(), 2u) << out;
    EXPECT_EQ(prompts, "user: Document 1\nassistant:\nuser: Document 1\nassistant: " + replies[0] +
                           "\nuser: Document 2\nassistant:\n");
    // Greedy: the first turn answers the same alone.
    EXPECT_EQ(lines_of(chat("Document 1\\n").first), std::vector<std::string>{replies[0]});

    for (const std::string flags : {"--num-samples 2", "--prompt x"}) {
        auto bad = test::run_command("echo hi | " + test::meshlm_binary() +
                                     " sample --checkpoint " + run + " --chat " + flags);
        EXPECT_NE(bad.exit_code, 0) << flags << "\n" << bad.output;
    }
}

TEST_F(Cli, ARunWorksFromAnyWorkingDirectory) {
    // Trained with relative paths; its config.yaml stores them absolute.
    auto r =
        test::run_command("cd " + dir_ + " && " + test::meshlm_binary() + " train" + gpt2_config() +
                          " --config.model.n_layer=1 --config.model.d_model=32"
                          " --config.model.n_head=2 --config.model.max_seq_len=32"
                          " --config.train.seq_len=32 --config.train.batch_size=4"
                          " --config.train.steps=2 --config.train.threads=2"
                          " --config.log.sample_tokens=0 --config.data.path=corpus.txt"
                          " --config.data.cache_dir=cache --config.log.dir=run");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string here = fs::canonical(dir_).string();
    const std::string yaml = test::read_file(dir_ + "/run/config.yaml");
    EXPECT_NE(yaml.find("  path: \"" + here + "/corpus.txt\"\n"), std::string::npos) << yaml;
    EXPECT_NE(yaml.find("  cache_dir: \"" + here + "/cache\"\n"), std::string::npos) << yaml;
    // eval from another directory finds the data.
    const std::string eval = "cd / && " + test::meshlm_binary() + " eval --checkpoint " + here +
                             "/run --batch-size 2 --config.train.seq_len=16";
    r = test::run_command(eval);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("split val: "), std::string::npos) << r.output;
    // ... or data pointed elsewhere: a corpus that is not there is named.
    r = test::run_command(eval + " --config.data.path=" + here + "/elsewhere.txt");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(here + "/elsewhere.txt"), std::string::npos) << r.output;
    // sample reads data.tokenizer: another tokenizer is used (here one too large for the model).
    r = test::run_command(
        "cd / && " + test::meshlm_binary() + " sample --checkpoint " + here +
        "/run --prompt x --config.data.tokenizer=" + test::fixture("tokenizers/bpe_trained.json"));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("bpe_trained.json' has 400 tokens but the model in " + here +
                            "/run has model.vocab_size 257"),
              std::string::npos)
        << r.output;
    // eval scores the run's model: a model key is not among the keys it reads.
    r = test::run_command(eval + " --config.model.n_layer=3");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("meshlm eval does not read model.n_layer"), std::string::npos)
        << r.output;
    // An export reads the model section: a key that changes what the weights compute is refused
    // with both values, one that does not (a dropout rate) reaches the export.
    const std::string convert = "cd / && " + test::meshlm_binary() +
                                " convert --from meshlm --to hf " + here + "/run " + here;
    r = test::run_command(convert + "/hf --config.model.n_layer=3");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("model.n_layer: 1 in the weights in " + here + "/run, 3 here"),
              std::string::npos)
        << r.output;
    r = test::run_command(convert + "/hf --config.model.dropout_attn=0.25");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(test::read_file(dir_ + "/hf/config.json").find("\"attn_pdrop\": 0.25"),
              std::string::npos);
}

TEST_F(Cli, SampleSaysWhenTheFirstTokenIsEndOfText) {
    // One-letter documents: every other token is an end-of-text, and one always follows a letter.
    std::string docs;
    for (int i = 0; i < 400; ++i) docs += std::string("{\"text\": \"") + "abcd"[i % 4] + "\"}\n";
    test::write_file(dir_ + "/a.jsonl", docs);
    const std::string run = dir_ + "/a_run";
    auto r = test::run_command(
        test::meshlm_binary() + " train" + gpt2_config() +
        " --config.model.n_layer=1 --config.model.d_model=32 --config.model.n_head=2"
        " --config.model.max_seq_len=32 --config.train.seq_len=32 --config.train.batch_size=4"
        " --config.train.steps=30 --config.train.threads=2 --config.optim.lr=0.01"
        " --config.optim.warmup_steps=0 --config.log.sample_tokens=0 --config.log.eval_interval=0"
        " --config.data.path=" +
        dir_ + "/a.jsonl --config.data.cache_dir=" + dir_ + "/cache --config.log.dir=" + run);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    test::write_file(dir_ + "/prompt", "a");
    const std::string sample = test::meshlm_binary() + " sample --checkpoint " + run +
                               " --temperature 0 --max-new-tokens 4 --prompt-file ";
    r = test::run_command(sample + dir_ + "/prompt");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output,
              "a\nnote: the sample is empty: the model's first token was end-of-text (try "
              "another --seed, a higher --temperature or a longer prompt)\n");
}

TEST(CliInfo, ReportsParameterCountFlopsAndMemory) {
    // Without --config: the default run's built-in recipe, configs/default.yaml (a 0.76M
    // Transformer-VQ), exactly as the file gives it.
    auto d = test::run_command(test::meshlm_binary() + " info");
    ASSERT_EQ(d.exit_code, 0) << d.output;
    EXPECT_NE(d.output.find("config default: 6 layers, width 128, 1 heads"), std::string::npos)
        << d.output;
    EXPECT_NE(d.output.find("parameters: 755968 (0.76M)"), std::string::npos) << d.output;
    auto f = test::run_command(test::meshlm_binary() + " info --config " + test::source_dir() +
                               "/configs/default.yaml");
    ASSERT_EQ(f.exit_code, 0) << f.output;
    // The same model, FLOPs and batch (the planned memory's runtime line varies run to run).
    const auto sizes = [](const std::string& out) {
        return out.substr(0, out.find("planned memory"));
    };
    EXPECT_EQ(sizes(d.output), sizes(f.output));

    auto r = test::run_command(test::meshlm_binary() + " info" + gpt2_config());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // GPT-2 parameter count from its closed form: V*C + P*C + L*(12C^2 + 13C) + 2C.
    const long V = 257, P = 128, C = 128, L = 4;
    const long params = V * C + P * C + L * (12 * C * C + 13 * C) + 2 * C;
    EXPECT_NE(r.output.find("parameters: " + std::to_string(params)), std::string::npos)
        << r.output;
    for (const char* what : {"FLOPs per token", "gradients", "optimizer state", "activations"})
        EXPECT_NE(r.output.find(what), std::string::npos) << what;

    auto g = test::run_command(test::meshlm_binary() + " info --config " + test::source_dir() +
                               "/configs/gpt2-small.yaml");
    ASSERT_EQ(g.exit_code, 0) << g.output;
    EXPECT_NE(g.output.find("parameters: 124439808"), std::string::npos) << g.output;
    // train.device cuda plans without a GPU: all of the plan but the runtime in GPU memory,
    // and what would refuse the run is named.
    auto c = test::run_command(test::meshlm_binary() + " info --config " + test::source_dir() +
                               "/configs/gpt2-small.yaml --config.train.device=cuda");
    ASSERT_EQ(c.exit_code, 0) << c.output;
    EXPECT_NE(c.output.find("train.device cuda, per GPU: "), std::string::npos) << c.output;
    EXPECT_EQ(c.output.find("is refused"), std::string::npos) << c.output;
    // Several ranks on GPUs plan per GPU: ZeRO 3 over 4 data ranks holds a quarter of the state.
    auto z = test::run_command(test::meshlm_binary() + " info --config " + test::source_dir() +
                               "/configs/gpt2-small.yaml --config.train.device=cuda "
                               "--config.parallel.data=4 --config.parallel.zero_stage=3");
    ASSERT_EQ(z.exit_code, 0) << z.output;
    EXPECT_EQ(z.output.find("is refused"), std::string::npos) << z.output;
    const auto per_gpu = [](const std::string& out) {
        const auto at = out.find("train.device cuda, per GPU: ");
        return at == std::string::npos ? -1.0 : std::stod(out.substr(at + 28));
    };
    EXPECT_GT(per_gpu(z.output), 0) << z.output;
    EXPECT_LT(per_gpu(z.output), per_gpu(c.output)) << z.output << c.output;
    auto v = test::run_command(test::meshlm_binary() + " info" + gpt2_config() +
                               " --config.train.device=cuda --config.optim.name=adafactor");
    ASSERT_EQ(v.exit_code, 0) << v.output;  // Adafactor's statistics live on the GPU too
    EXPECT_EQ(v.output.find("is refused"), std::string::npos) << v.output;
    // The default run's Transformer-VQ trains on the GPU too (its attention has CUDA kernels).
    auto q = test::run_command(test::meshlm_binary() + " info --config.train.device=cuda");
    ASSERT_EQ(q.exit_code, 0) << q.output;
    EXPECT_EQ(q.output.find("is refused"), std::string::npos) << q.output;
    EXPECT_GT(per_gpu(q.output), 0) << q.output;

    // Adafactor (every matrix of the GPT-2 is at least 128 x 128, so factored): full
    // second moments for the vectors only, L * (2C + 3C + C + 2C + 4C + C) + 2C (ln_f) = 6912
    // floats; row and column statistics and the update's factors, 2 * (V + C + P + C +
    // L * (3C + C + C + C + 4C + C + C + 4C)) = 2 * 8833 floats; double sums of those and two
    // per tensor (12 per block + 4).
    auto a = test::run_command(test::meshlm_binary() + " info" + gpt2_config() +
                               " --config.optim.name=adafactor --config.parallel.zero_stage=1");
    ASSERT_EQ(a.exit_code, 0) << a.output;
    EXPECT_NE(a.output.find("optimizer state (v, factored)"), std::string::npos) << a.output;
    const long adafactor = 4 * (6912 + 2 * 8833) + 8 * (8833 + 2 * 52);
    EXPECT_NE(a.output.find(" optimizer " + std::to_string(adafactor) + " "), std::string::npos)
        << a.output;
}

TEST(CliErrors, BadConfigsExitNonZeroWithAMessageAndWriteNothing) {
    std::string dir = test::temp_dir("bad");
    struct Case {
        std::string flags, expect;
    } cases[] = {
        {"--config.model.n_layers=3", "did you mean 'model.n_layer'"},
        {"--config.model.n_layer=abc", "model.n_layer"},
        {"--config.model.n_head=3", "divide"},
        {"--config.optim.lr=-1", "optim.lr"},
        {"--config.train.seq_len=4096", "max_seq_len"},
    };
    for (const auto& c : cases) {
        std::string run = dir + "/run";
        auto r = test::run_command(test::meshlm_binary() + " train " + c.flags +
                                   " --config.log.dir=" + run);
        EXPECT_NE(r.exit_code, 0) << c.flags;
        EXPECT_NE(r.output.find(c.expect), std::string::npos) << c.flags << ":\n" << r.output;
        EXPECT_FALSE(fs::exists(run)) << c.flags << " created the run directory";
    }
    std::string yaml = dir + "/bad.yaml";
    std::ofstream(yaml) << "model:\n  n_layer: 2\n  widht: 64\n";
    auto r = test::run_command(test::meshlm_binary() + " train --config " + yaml);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("bad.yaml"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("model.widht"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace meshlm

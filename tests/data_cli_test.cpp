// The data pipeline end to end through the `meshlm` binary: prepare (JSONL, gzip), training on a
// prepared directory and on raw inputs (prepared into a cache once, then reused), tokenizer
// mismatches refused before anything is written, pad packing, sequence-length warmup, eval on
// val and test, and tokenize against tiktoken's ids.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "test_util.h"

namespace meshlm {
namespace {

namespace fs = std::filesystem;

// The "loss" values of a metrics.jsonl, one per line (timings left out: they always differ).
std::string losses_of(const std::string& metrics_path) {
    std::string text = test::read_file(metrics_path), out;
    std::regex re("\"loss\": ([^,}]+)");
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it)
        out += (*it)[1].str() + "\n";
    return out;
}

// 400 JSONL records, gzip-compressed.
std::string make_jsonl_gz(const std::string& dir) {
    std::string text;
    for (int i = 0; i < 400; ++i)
        text += "{\"id\": " + std::to_string(i) + ", \"body\": \"record " + std::to_string(i) +
                ": the quick brown fox jumps over the lazy dog " + std::to_string(i % 11) +
                " times.\"}\n";
    std::string path = dir + "/corpus.jsonl.gz";
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
    gzclose(f);
    return path;
}

std::string bin() {
    return test::meshlm_binary();
}

// Flags of a tiny, quick training run.
std::string tiny(const std::string& run, int steps = 12) {
    return " --config.model.n_layer=1 --config.model.d_model=32 --config.model.n_head=2"
           " --config.model.max_seq_len=32 --config.train.seq_len=32 --config.train.batch_size=4"
           " --config.train.threads=2 --config.train.peak_gflops=100 --config.log.interval=4"
           " --config.log.eval_interval=0 --config.log.sample_tokens=8"
           " --config.train.final_eval_batches=0 --config.train.precision=fp32"
           " --config.train.steps=" +
           std::to_string(steps) + " --config.log.dir=" + run;
}

class DataCli : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = test::temp_dir("datacli");
        corpus_ = make_jsonl_gz(dir_);
    }
    std::string dir_, corpus_;
};

TEST_F(DataCli, PrepareTrainOnItAndEvalValAndTest) {
    const std::string data = dir_ + "/prepared";
    auto p = test::run_command(bin() + " prepare --input " + corpus_ + " --field body" +
                               " --tokenizer byte --val-fraction 0.1 --test-fraction 0.1" +
                               " --out " + data);
    ASSERT_EQ(p.exit_code, 0) << p.output;
    ASSERT_TRUE(fs::exists(data + "/meta.json"));

    const std::string run = dir_ + "/run";
    auto t = test::run_command(bin() + " train" + tiny(run) + " --config.data.path=" + data);
    ASSERT_EQ(t.exit_code, 0) << t.output;
    EXPECT_NE(t.output.find(data), std::string::npos);
    EXPECT_NE(t.output.find("val_loss"), std::string::npos);

    std::regex re("loss ([0-9.]+) nats/token \\| perplexity ([0-9.]+) \\| ([0-9.]+) bits/byte");
    for (const char* split : {"val", "test"}) {
        auto e = test::run_command(bin() + " eval --checkpoint " + run + " --split " + split);
        ASSERT_EQ(e.exit_code, 0) << e.output;
        std::smatch m;
        ASSERT_TRUE(std::regex_search(e.output, m, re)) << e.output;
        const double loss = std::stod(m[1]), ppl = std::stod(m[2]), bpb = std::stod(m[3]);
        EXPECT_NEAR(ppl, std::exp(loss), 1e-3 * ppl) << split;
        // Byte tokens: every scored token stands for one byte.
        EXPECT_NEAR(bpb, loss / std::log(2.0), 1e-5) << split;
        EXPECT_LT(loss, std::log(257.0)) << "the model learned something";
    }
    // The run's final validation loss equals eval's on val (same rows, same weights; eval's
    // GEMMs are fp32, so the run's must be too: `tiny` pins train.precision).
    std::smatch last, ev;
    std::string metrics = test::read_file(run + "/metrics.jsonl");
    std::regex val_re("\"val_loss\": ([0-9.eE+-]+)");
    for (std::sregex_iterator it(metrics.begin(), metrics.end(), val_re), end; it != end; ++it)
        last = *it;
    auto e = test::run_command(bin() + " eval --checkpoint " + run + " --split val");
    ASSERT_TRUE(std::regex_search(e.output, ev, re));
    EXPECT_NEAR(std::stod(last[1]), std::stod(ev[1]), 1e-5);
}

TEST_F(DataCli, RawInputsArePreparedOnceIntoTheCacheThenReused) {
    const std::string cache = dir_ + "/cache",
                      bpe = test::fixture("tokenizers/bpe_merges_pairs.json");
    auto flags = " --config.data.path=" + corpus_ + " --config.data.field=body" +
                 " --config.data.tokenizer=" + bpe + " --config.model.vocab_size=1536" +
                 " --config.data.cache_dir=" + cache;
    auto r1 = test::run_command(bin() + " train" + tiny(dir_ + "/r1") + flags);
    ASSERT_EQ(r1.exit_code, 0) << r1.output;
    EXPECT_NE(r1.output.find("data: preparing"), std::string::npos) << r1.output;
    auto r2 = test::run_command(bin() + " train" + tiny(dir_ + "/r2") + flags);
    ASSERT_EQ(r2.exit_code, 0) << r2.output;
    EXPECT_NE(r2.output.find("using the prepared cache"), std::string::npos) << r2.output;
    // Same data, same seed: the two runs are the same run.
    EXPECT_FALSE(losses_of(dir_ + "/r1/metrics.jsonl").empty());
    EXPECT_EQ(losses_of(dir_ + "/r1/metrics.jsonl"), losses_of(dir_ + "/r2/metrics.jsonl"));
    // The run keeps a copy of its tokenizer and samples through it.
    EXPECT_TRUE(fs::exists(dir_ + "/r1/bpe_merges_pairs.json"));
    auto s = test::run_command(bin() + " sample --checkpoint " + dir_ +
                               "/r1 --prompt record --max-new-tokens 5 --temperature 0");
    EXPECT_EQ(s.exit_code, 0) << s.output;
    EXPECT_EQ(s.output.rfind("record", 0), 0u) << s.output;
}

TEST_F(DataCli, APreparedDirectoryWithAnotherTokenizerIsRefusedBeforeWriting) {
    const std::string data = dir_ + "/prepared";
    ASSERT_EQ(test::run_command(bin() + " prepare --input " + corpus_ + " --field body" +
                                " --tokenizer byte --out " + data)
                  .exit_code,
              0);
    const std::string run = dir_ + "/run";
    auto r = test::run_command(
        bin() + " train" + tiny(run) + " --config.data.path=" + data + " --config.data.tokenizer=" +
        test::fixture("tokenizers/bpe_merges_pairs.json") + " --config.model.vocab_size=1536");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("tokenizer"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(run)) << "the run directory must not be created";
}

TEST_F(DataCli, PadPackingAndSequenceLengthWarmupTrain) {
    const std::string base = " --config.data.path=" + corpus_ + " --config.data.field=body" +
                             " --config.data.cache_dir=" + dir_ + "/cache";
    auto pad = test::run_command(bin() + " train" + tiny(dir_ + "/pad") + base +
                                 " --config.data.packing=pad");
    ASSERT_EQ(pad.exit_code, 0) << pad.output;
    EXPECT_NE(pad.output.find("packing pad"), std::string::npos);
    auto warm =
        test::run_command(bin() + " train" + tiny(dir_ + "/warm") + base +
                          " --config.train.seq_warmup_steps=4 --config.train.seq_warmup_len=8");
    ASSERT_EQ(warm.exit_code, 0) << warm.output;
    auto plain = test::run_command(bin() + " train" + tiny(dir_ + "/plain") + base);
    ASSERT_EQ(plain.exit_code, 0) << plain.output;
    // The warmup changes what the first steps see: the first logged losses differ, and the
    // pad run differs from both.
    std::string w = losses_of(dir_ + "/warm/metrics.jsonl"),
                p = losses_of(dir_ + "/plain/metrics.jsonl");
    ASSERT_EQ(std::count(w.begin(), w.end(), '\n'), 3);
    EXPECT_NE(w.substr(0, w.find('\n')), p.substr(0, p.find('\n')));
    EXPECT_NE(losses_of(dir_ + "/pad/metrics.jsonl"), p);
}

TEST(TokenizeCli, EncodesLikeTiktokenAndDecodesBack) {
    std::ifstream corpus(test::fixture("tokenizers/corpus.txt")),
        ids(test::fixture("tokenizers/gpt2_ordinary.ids"));
    std::string line, expected;
    std::getline(corpus, line);
    std::getline(ids, expected);  // header comment
    std::getline(ids, expected);
    const std::string spec = test::fixture("tokenizers/gpt2.tiktoken");
    auto enc = test::run_command("printf '%s\\n' '" + line + "' | " + bin() +
                                 " tokenize --tokenizer " + spec);
    ASSERT_EQ(enc.exit_code, 0) << enc.output;
    EXPECT_EQ(enc.output, expected + "\n");
    auto dec = test::run_command("printf '%s\\n' '" + expected + "' | " + bin() +
                                 " tokenize --decode --tokenizer " + spec);
    EXPECT_EQ(dec.output, line + "\n");
}

}  // namespace
}  // namespace meshlm

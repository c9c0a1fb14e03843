// Training FLOPs per token (model/flops.h) against counts written out here matmul by matmul, for
// GPT-2 small, a GQA Llama (Llama 3.2 1B's shape) and a Transformer-VQ model; MFU = tokens/s x
// FLOPs per token / peak; and the trainer's logged mfu against its logged tokens/s with the
// count of its model.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "meshlm/model/flops.h"
#include "meshlm/model/transformer_layout.h"
#include "test_util.h"

namespace meshlm {
namespace {

// 6 flops per multiply-add of a weight per token (forward 2, backward 4).
double train(double macs) {
    return 6 * macs;
}

TEST(Flops, Gpt2SmallPerMatmul) {
    ModelConfig c;  // GPT-2's defaults: 4C GELU MLP, tied head, learned positions
    c.n_layer = 12, c.d_model = 768, c.n_head = 12, c.vocab_size = 50257, c.max_seq_len = 1024;
    const double C = 768, L = 12, V = 50257, T = 1024;
    const double per_layer = 3 * C * C       // q, k, v
                             + C * C         // attention output
                             + C * 4 * C     // MLP in
                             + 4 * C * C;    // MLP out
    const double attention = T * C + T * C;  // q.k over T keys, p.v over T values, per layer
    const double want = train(L * per_layer) + train(V * C) + train(L * attention);
    EXPECT_DOUBLE_EQ(train_flops_per_token(c, transformer_layout(c), 1024), want);
}

TEST(Flops, GqaLlamaPerMatmul) {
    ModelConfig c;
    c.n_layer = 16, c.d_model = 2048, c.n_head = 32, c.n_kv_head = 8, c.vocab_size = 128256;
    c.max_seq_len = 2048, c.norm = "rmsnorm", c.norm_bias = false, c.position = "rope";
    c.mlp = "swiglu", c.d_ff = 8192, c.tied_head = false;
    c.qkv_bias = c.proj_bias = c.mlp_bias = false;
    const double C = 2048, L = 16, V = 128256, T = 2048, D = 64, H = 32, K = 8, F = 8192;
    const double per_layer = C * H * D        // q
                             + 2 * C * K * D  // k, v: 8 heads
                             + H * D * C      // o
                             + 2 * C * F      // gate, up
                             + F * C;         // down
    const double attention = T * H * D + T * H * D;
    const double want = train(L * per_layer) + train(V * C) + train(L * attention);
    EXPECT_DOUBLE_EQ(train_flops_per_token(c, transformer_layout(c), 2048), want);
}

TEST(Flops, TransformerVqPerMatmul) {
    ModelConfig c;
    c.n_layer = 4, c.d_model = 256, c.n_head = 1, c.vocab_size = 257, c.max_seq_len = 1024;
    c.attention = "vq", c.mlp = "none", c.norm = "rmsnorm", c.norm_bias = false;
    c.position = "none", c.tied_head = false;
    c.vq_block_len = 128, c.vq_codes = 512, c.vq_d_k = 128, c.vq_d_v = 512;
    const double C = 256, L = 4, V = 257, B = 128, S = 512, dk = 128, dv = 512;
    const double per_layer = 2 * dk * C    // q, k
                             + 2 * dv * C  // v, gate
                             + dk * C      // the relative-position projection
                             + dv * C;     // output
    // Per query: scores and values over the window's 2B keys and the S compressed codes, and
    // the relative-position scores of the B + 1 distances.
    const double attention = 2 * B * (dk + dv) + S * (dk + dv) + (B + 1) * dk;
    const double search = 2 * S * dk;  // each key's nearest code: forward only
    const double want = train(L * per_layer) + train(V * C) + train(L * attention) + L * search;
    EXPECT_DOUBLE_EQ(train_flops_per_token(c, transformer_layout(c), 1024), want);
}

TEST(Flops, MfuIsTokensPerSecondTimesFlopsOverThePeak) {
    // 2000 tokens/s of 3e6 FLOPs on 2 ranks of 10 GFLOP/s: 6e9 / 2e10.
    EXPECT_DOUBLE_EQ(model_flops_utilization(2000, 3e6, 10, 2), 0.3);
    EXPECT_DOUBLE_EQ(model_flops_utilization(500, 4e6, 8, 1), 0.25);
}

TEST(Flops, TheTrainerLogsMfuFromItsThroughput) {
    const std::string run = test::temp_dir("mfu_run") + "/run";
    const auto r = test::run_command(
        test::meshlm_binary() + " train --config " + test::source_dir() +
        "/configs/tiny-gpt2.yaml"  // a GPT-2 (without --config: the default run's VQ recipe)
        " --config.model.n_layer=1 --config.model.d_model=32 --config.model.n_head=2"
        " --config.model.max_seq_len=32 --config.train.seq_len=32 --config.train.batch_size=2"
        " --config.train.steps=3 --config.train.threads=2 --config.train.peak_gflops=1000"
        " --config.train.precision=fp32 --config.log.interval=1 --config.log.eval_interval=0"
        " --config.log.sample_tokens=0 --config.checkpoint.interval=0"
        " --config.train.final_eval_batches=1 --config.data.synthetic=true --config.log.dir=" +
        run);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // The tiny model per matmul: one layer of 12 C^2, the tied head V C, attention 2 T C.
    const double C = 32, V = 257, T = 32;
    const double flops = train(12 * C * C) + train(V * C) + train(2 * T * C);
    const std::string text = test::read_file(run + "/metrics.jsonl");
    std::regex re("\"tokens_per_s\": ([0-9.e+-]+), \"mfu\": ([0-9.e+-]+)");
    int lines = 0;
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it, ++lines) {
        const double tps = std::stod((*it)[1].str()), mfu = std::stod((*it)[2].str());
        // Both are printed to 6 significant digits: 5e-6 relative each.
        EXPECT_NEAR(mfu, tps * flops / 1000e9, 1.1e-5 * mfu) << text;
    }
    EXPECT_EQ(lines, 3) << text;
}

}  // namespace
}  // namespace meshlm

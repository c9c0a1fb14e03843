// Activation recomputation (train.recompute) changes memory, never results: the loss, the logits'
// gradient and every parameter gradient are bitwise those of recompute = none, for sequential and
// parallel blocks, with dropout at every site, GQA, rotary positions and T5's bias; and the planned
// bytes shrink in the documented order.
#include <gtest/gtest.h>

#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include "meshlm/core/buffer.h"
#include "meshlm/core/rng.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"
#include "test_util.h"

namespace meshlm {
namespace {

struct Family {
    std::string name;
    ModelConfig cfg;
};

std::vector<Family> families() {
    ModelConfig gpt2;  // layernorm, learned positions, biases, GELU
    gpt2.n_layer = 3, gpt2.d_model = 48, gpt2.n_head = 3, gpt2.vocab_size = 61,
    gpt2.max_seq_len = 32;
    gpt2.dropout_embd = 0.1f, gpt2.dropout_attn = 0.1f, gpt2.dropout_resid = 0.1f;

    ModelConfig llama = gpt2;  // RMSNorm, rotary, GQA, SwiGLU, no biases, untied head
    llama.norm = "rmsnorm", llama.norm_bias = false, llama.position = "rope";
    llama.n_head = 4, llama.n_kv_head = 2, llama.d_model = 64, llama.mlp = "swiglu",
    llama.d_ff = 96;
    llama.qkv_bias = llama.proj_bias = llama.mlp_bias = false, llama.tied_head = false;

    ModelConfig gptj = gpt2;  // parallel block, partial interleaved rotary
    gptj.block = "parallel", gptj.position = "rope", gptj.rope_dim = 8,
    gptj.rope_style = "interleaved";
    gptj.n_head = 4, gptj.d_model = 64;
    ModelConfig qk = llama;  // seed 002's qk_norm: rstd per head is kept or recomputed too
    qk.qk_norm = true;
    ModelConfig act = gptj;  // seed 002's attention nonlinearity: no dropout of probabilities
    act.attn_act = "norm_sqrelu", act.dropout_attn = 0.f;
    ModelConfig vq = llama;  // Transformer-VQ: the linear-time pass reruns under `block` only
    vq.attention = "vq", vq.position = "none", vq.mlp = "sqrelu", vq.d_ff = 0;
    vq.vq_block_len = 8, vq.vq_codes = 16, vq.vq_d_k = 16, vq.vq_d_v = 0;
    vq.dropout_attn = 0.f;
    ModelConfig vq_only = vq;  // the seed's layer: blocks of attention only
    vq_only.mlp = "none";
    ModelConfig t5 = gpt2;  // T5's bias: its gradient gathered once per block, rerun or not
    t5.position = "t5_bias", t5.t5_buckets = 8, t5.t5_max_distance = 12;
    t5.n_head = 4, t5.n_kv_head = 2, t5.d_model = 64, t5.logit_scale = 0.5f;
    return {{"gpt2", gpt2},
            {"vq", vq},
            {"vq_attention_only", vq_only},
            {"llama", llama},
            {"gptj", gptj},
            {"llama_qk_norm", qk},
            {"gptj_norm_sqrelu", act},
            {"t5_bias", t5}};
}

using Result = test::ModelStep;

Result run(const ModelConfig& cfg, Recompute r, int B, int T) {
    return test::model_step(cfg, B, T, r);
}

TEST(Recompute, BitwiseSameGradientsAsKeepingEverything) {
    const int B = 2, T = 32;
    for (const Family& f : families()) {
        const Result none = run(f.cfg, Recompute::none, B, T);
        float largest = 0;
        for (float g : none.grads) largest = std::max(largest, std::abs(g));
        ASSERT_GT(largest, 0.f) << f.name;
        for (Recompute r : {Recompute::attention, Recompute::block}) {
            const Result got = run(f.cfg, r, B, T);
            const std::string what = f.name + ", recompute " + recompute_name(r);
            EXPECT_EQ(std::memcmp(&got.loss, &none.loss, sizeof(float)), 0) << what;
            ASSERT_EQ(got.grads.size(), none.grads.size()) << what;
            std::size_t differ = 0, first = got.grads.size();
            for (std::size_t i = 0; i < got.grads.size(); ++i)
                if (std::memcmp(&got.grads[i], &none.grads[i], sizeof(float)) != 0) {
                    if (differ++ == 0) first = i;
                }
            EXPECT_EQ(differ, 0u) << what << ": first differing gradient at " << first;
        }
    }
}

TEST(Recompute, PlansLessMemoryInTheDocumentedOrder) {
    for (const Family& f : families()) {
        const int B = 4, T = 32;
        std::size_t bytes[3];
        int i = 0;
        for (Recompute r : {Recompute::none, Recompute::attention, Recompute::block}) {
            bytes[i] = transformer_activation_floats(f.cfg, B, T, 1, r) * sizeof(float);
            // The model takes exactly what info reports.
            EXPECT_EQ(Transformer(f.cfg, B, T, nullptr, r).activation_bytes(), bytes[i]) << f.name;
            ++i;
        }
        EXPECT_LT(bytes[1], bytes[0]) << f.name;
        EXPECT_LT(bytes[2], bytes[1]) << f.name;
    }
}

// `meshlm info` plans each choice's memory and the trainer's peak RSS agrees with it within 10 %
// (a model whose activations dominate: T = 1024, B = 8, width 256), with the same losses.
TEST(Recompute, TrainerPeakMemoryMatchesInfo) {
    if (test::sanitizer_build()) GTEST_SKIP() << "peak RSS is the sanitizer's, not the plan's";
    const std::string dir = test::temp_dir("recompute_rss");
    // A GPT-2 (configs/tiny-gpt2.yaml; without --config: the default run's Transformer-VQ).
    const std::string model =
        " --config " + test::source_dir() + "/configs/tiny-gpt2.yaml" +
        " --config.model.d_model=256 --config.model.n_head=4 --config.model.max_seq_len=1024"
        " --config.train.seq_len=1024 --config.train.batch_size=8";
    std::string first_loss;
    double previous_plan = 1e30;
    for (const char* r : {"none", "attention", "block"}) {
        const std::string rc = std::string(" --config.train.recompute=") + r;
        const auto info = test::run_command(test::meshlm_binary() + " info" + model + rc);
        ASSERT_EQ(info.exit_code, 0) << info.output;
        std::smatch m;
        ASSERT_TRUE(std::regex_search(info.output, m, std::regex(R"(\n  total +([0-9.]+) MiB)")))
            << info.output;
        const double planned = std::stod(m[1]);
        EXPECT_LT(planned, previous_plan) << r;
        previous_plan = planned;
        const auto train = test::run_command(
            test::meshlm_binary() + " train" + model + rc +
            " --config.train.steps=2 --config.log.eval_interval=0 --config.log.sample_tokens=0"
            " --config.checkpoint.interval=0 --config.train.final_eval_batches=1"
            " --config.log.dir=" +
            dir + "/" + r);
        ASSERT_EQ(train.exit_code, 0) << train.output;
        ASSERT_TRUE(std::regex_search(train.output, m,
                                      std::regex(R"(peak RSS during training: ([0-9]+) MiB)")))
            << train.output;
        const double rss = std::stod(m[1]);
        EXPECT_NEAR(rss / planned, 1.0, 0.10)
            << r << ": planned " << planned << " MiB, peak RSS " << rss << " MiB";
        ASSERT_TRUE(
            std::regex_search(train.output, m, std::regex(R"(step +2/2 \| loss ([0-9.]+))")))
            << train.output;
        if (first_loss.empty()) first_loss = m[1];
        EXPECT_EQ(m[1], first_loss) << r;
    }
}

TEST(Recompute, NamesRoundTripAndBadNamesAreRefused) {
    for (Recompute r : {Recompute::none, Recompute::attention, Recompute::block})
        EXPECT_EQ(parse_recompute(recompute_name(r)), r);
    EXPECT_THROW(parse_recompute("full"), std::exception);
}

}  // namespace
}  // namespace meshlm

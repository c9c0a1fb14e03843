// Every architecture option against PyTorch autograd: logits, loss and every parameter gradient
// of tiny models at the fixtures' weights -- a GPT-J-style parallel block with partial
// interleaved rotary and a biased untied head, Llama-style GQA with SwiGLU and RMSNorm, MQA with
// q/k biases, ALiBi over 6 heads, T5's bucketed relative bias (GQA), each MLP activation,
// RMSNorm with a bias, z-loss, a logit scale, no positions. Fixtures:
// tests/fixtures/transformer/*.safetensors from tools/reference/transformer_reference.py
// (computed in float64, stored as float32).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "meshlm/core/threads.h"
#include "meshlm/io/safetensors.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/model/transformer.h"
#include "test_util.h"

namespace meshlm {
namespace {

// The fixture's model.* keys (the other metadata describes the batch and the generator).
ModelConfig config_of(const std::map<std::string, std::string>& md) {
    ModelConfig c;
    auto i = [&](const char* k) { return std::stoi(md.at(k)); };
    auto f = [&](const char* k) { return std::stof(md.at(k)); };
    auto b = [&](const char* k) { return md.at(k) == "true"; };
    c.n_layer = i("n_layer"), c.d_model = i("d_model"), c.n_head = i("n_head");
    c.n_kv_head = i("n_kv_head"), c.vocab_size = i("vocab_size"), c.max_seq_len = i("max_seq_len");
    c.block = md.at("block"), c.norm = md.at("norm"), c.norm_bias = b("norm_bias");
    c.norm_eps = f("norm_eps"), c.position = md.at("position"), c.rope_dim = i("rope_dim");
    c.rope_style = md.at("rope_style"), c.rope_base = f("rope_base");
    c.qkv_bias = b("qkv_bias"), c.proj_bias = b("proj_bias"), c.mlp_bias = b("mlp_bias");
    c.mlp = md.at("mlp"), c.d_ff = i("d_ff"), c.tied_head = b("tied_head");
    c.head_bias = b("head_bias"), c.z_loss = f("z_loss");
    // Keys added after the first fixtures: absent there, the defaults.
    c.qk_norm = md.count("qk_norm") && b("qk_norm");
    if (md.count("attn_act")) c.attn_act = md.at("attn_act");
    if (md.count("logit_scale")) c.logit_scale = f("logit_scale");
    if (md.count("t5_buckets")) c.t5_buckets = i("t5_buckets");
    if (md.count("t5_max_distance")) c.t5_max_distance = i("t5_max_distance");
    return c;
}

class TransformerReference : public ::testing::TestWithParam<std::string> {};

TEST_P(TransformerReference, LogitsLossAndEveryGradientMatchPyTorch) {
    set_thread_count(2);
    SafetensorsFile file(test::fixture("transformer/" + GetParam() + ".safetensors"));
    const auto& md = file.metadata();
    const ModelConfig cfg = config_of(md);
    const int B = std::stoi(md.at("batch")), T = std::stoi(md.at("seq_len"));
    Transformer m(cfg, B, T);
    const ParamLayout& layout = m.layout();
    std::vector<float> params(layout.total(), 0.f), grads(layout.total(), 0.f);
    std::size_t tensors = 0;
    for (const auto& s : layout.slices()) {
        auto v = file.f32("param." + s.name, &s.shape);
        std::copy(v.begin(), v.end(), params.begin() + s.offset);
        ++tensors;
    }
    // Every parameter of the fixture is one of the model's, and the other way round.
    std::size_t in_file = 0;
    for (const auto& name : file.names()) in_file += name.starts_with("param.");
    EXPECT_EQ(in_file, tensors);

    auto tokens = file.i32("tokens"), targets = file.i32("targets");
    m.forward(params.data(), tokens.data(), nullptr, B, T);
    const double logit_err = test::scaled_max_error(m.logits(), file.f32("logits"));
    EXPECT_LT(logit_err, 1e-5) << "logits, error relative to max |logit|";

    int scored = 0;
    for (int t : targets) scored += t >= 0;
    const float ce = m.forward(params.data(), tokens.data(), targets.data(), B, T, 1.f / scored);
    const float ref_ce = file.f32("ce")[0];
    EXPECT_NEAR(ce, ref_ce, 1e-5 * std::fabs(ref_ce)) << "mean cross-entropy";
    m.backward(params.data(), grads.data());
    double worst = 0;
    for (const auto& s : layout.slices()) {
        const std::vector<float> ref = file.f32("grad." + s.name);
        // The key bias's true gradient is exactly zero without rotary positions: the error
        // is relative to the whole tensor's scale, as for every tensor.
        const double err = test::scaled_max_error(grads.data() + s.offset, ref);
        EXPECT_LT(err, 1e-4) << "gradient of " << s.name << " (error relative to its max)";
        worst = std::max(worst, err);
    }
    std::printf("%-14s logits err %.2e, ce %.7f vs %.7f, worst gradient err %.2e\n",
                GetParam().c_str(), logit_err, ce, ref_ce, worst);
}

INSTANTIATE_TEST_SUITE_P(Options, TransformerReference,
                         ::testing::Values("gptj_style", "llama_gqa", "mqa_qkv_bias", "alibi",
                                           "mlp_gelu", "mlp_relu", "mlp_sqrelu", "mlp_geglu",
                                           "rmsnorm_bias", "zloss", "nopos", "qk_norm",
                                           "attn_sqrelu", "attn_norm_elu", "t5_bias",
                                           "logit_scale"));

}  // namespace
}  // namespace meshlm

// The init rules' drawn statistics, tensor by tensor, against the rules written out here from
// the seeds: GPT-2's (seed 000: N(0, 0.02), residual output projections 0.02 / sqrt(2L)),
// GPT-J's (seed 003, haiku: truncated normal at +-2 std without rescaling, 1 / sqrt(fan_in),
// output projections (2 / L) / sqrt(d_model), embedding 1 / sqrt(V), positions 0.02) and
// Transformer-VQ's (seed 001: fan-in normal, embeddings N(0, 1)). At 1 and 2 model ranks, each
// rank's local tensors: the mean within 5 standard errors of 0, the standard deviation within 5
// standard errors of the rule's (for the truncated normal, std * sqrt(1 - 4 phi(2) / (2 Phi(2) -
// 1)) = 0.880 std), every draw inside the truncation bound, constants exact. A tensor the rules
// here do not name fails, so a new tensor needs its rule stated.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "meshlm/cli/config.h"
#include "meshlm/model/transformer_layout.h"
#include "test_util.h"

namespace meshlm {
namespace {

struct Rule {
    enum Kind { normal, truncated, zeros, ones } kind;
    double std = 0;
};

bool ends(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The constants every rule shares: biases 0 (VQ's u and v too), norm gains 1 (and VQ's code
// counts).
bool constant(const std::string& n, Rule& r) {
    const bool norm = n.find("ln_") != std::string::npos;
    if (ends(n, ".bias") || ends(n, "vq.u") || ends(n, "vq.v")) {
        r = {Rule::zeros};
        return true;
    }
    if ((norm && ends(n, ".weight")) || ends(n, "vq.c_count")) {
        r = {Rule::ones};
        return true;
    }
    return false;
}

Rule gpt2_rule(const std::string& n, const ModelConfig& c) {
    Rule r{};
    if (constant(n, r)) return r;
    const double s = c.init_std;
    if (ends(n, "c_proj.weight")) return {Rule::normal, s / std::sqrt(2.0 * c.n_layer)};
    if (n == "wte.weight" || n == "wpe.weight" || ends(n, "c_attn.weight") ||
        ends(n, "c_fc.weight") || n == "lm_head.weight")
        return {Rule::normal, s};
    ADD_FAILURE() << "no gpt2 rule for " << n;
    return r;
}

Rule gptj_rule(const std::string& n, const ModelConfig& c) {
    Rule r{};
    if (constant(n, r)) return r;
    const double C = c.d_model, V = c.vocab_size, L = c.n_layer;
    if (ends(n, "c_proj.weight")) return {Rule::truncated, 2.0 / L / std::sqrt(C)};
    if (n == "wte.weight") return {Rule::truncated, 1 / std::sqrt(V)};
    if (n == "wpe.weight" || n == "t5.rel_bias") return {Rule::truncated, 0.02};
    if (ends(n, "c_attn.weight") || ends(n, "c_fc.weight") || n == "lm_head.weight")
        return {Rule::truncated, 1 / std::sqrt(C)};
    ADD_FAILURE() << "no gptj rule for " << n;
    return r;
}

Rule vq_rule(const std::string& n, const ModelConfig& c) {
    Rule r{};
    if (constant(n, r)) return r;
    const double C = c.d_model, dv = c.vq_value_width(), S = c.vq_codes;
    if (n == "wte.weight") return {Rule::normal, 1.0};
    if (ends(n, "vq.out.weight")) return {Rule::normal, 1 / std::sqrt(dv)};
    if (ends(n, "vq.c_sum")) return {Rule::normal, 1 / std::sqrt(S)};
    if (ends(n, "vq.qk.weight") || ends(n, "vq.vg.weight") || ends(n, "vq.r.weight") ||
        n == "lm_head.weight")
        return {Rule::normal, 1 / std::sqrt(C)};
    ADD_FAILURE() << "no vq rule for " << n;
    return r;
}

// The std of N(0, 1) truncated to [-2, 2]: Var = 1 - 2 * 2 phi(2) / (2 Phi(2) - 1).
double truncated_std() {
    const double phi = std::exp(-2.0) / std::sqrt(2 * std::numbers::pi);
    const double mass = std::erf(2 / std::sqrt(2.0));  // 2 Phi(2) - 1
    return std::sqrt(1 - 4 * phi / mass);
}

template <typename RuleOf>
void check_rule(const ModelConfig& cfg, RuleOf rule_of, int model) {
    for (int rank = 0; rank < model; ++rank) {
        const ParamLayout layout = transformer_layout(cfg, model);
        std::vector<float> p(layout.total());
        init_params(cfg, layout, model, rank, p.data(), 23, 0, layout.total());
        int drawn = 0;
        for (const ParamSlice& s : layout.slices()) {
            const Rule r = rule_of(s.name, cfg);
            const float* x = p.data() + s.offset;
            const std::string at =
                s.name + " (rank " + std::to_string(rank) + " of " + std::to_string(model) + ")";
            if (r.kind == Rule::zeros || r.kind == Rule::ones) {
                const float want = r.kind == Rule::ones ? 1.f : 0.f;
                for (std::size_t i = 0; i < s.numel; ++i) ASSERT_EQ(x[i], want) << at << " " << i;
                continue;
            }
            ++drawn;
            const double n = static_cast<double>(s.numel);
            double sum = 0, sq = 0, top = 0;
            for (std::size_t i = 0; i < s.numel; ++i)
                sum += x[i], sq += double(x[i]) * x[i],
                    top = std::max(top, std::fabs(double(x[i])));
            const double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
            const double want_sd = r.kind == Rule::truncated ? r.std * truncated_std() : r.std;
            EXPECT_LT(std::fabs(mean), 5 * want_sd / std::sqrt(n)) << at << " mean";
            // sd's standard error is at most sd / sqrt(2 n) for these (normal or lighter) tails.
            EXPECT_NEAR(sd / want_sd, 1.0, 5 / std::sqrt(2 * n)) << at << " std " << sd;
            // The tails: a truncated draw never passes 2 std; 1000 draws of either reach past
            // 1.8 std (truncated: all miss [1.8, 2] std with chance 1e-12) and an untruncated
            // one past 2.5 std (all miss with chance 4e-6).
            if (r.kind == Rule::truncated)
                EXPECT_LE(top, 2 * r.std * (1 + 1e-6)) << at << " past the truncation";
            if (n >= 1000)
                EXPECT_GT(top, (r.kind == Rule::truncated ? 1.8 : 2.5) * r.std) << at << " tails";
        }
        EXPECT_GE(drawn, 4);
    }
}

ModelConfig small(const std::string& init) {
    ModelConfig c;
    c.n_layer = 3, c.d_model = 64, c.n_head = 4, c.max_seq_len = 64;
    c.vocab_size = 258;  // splits over 2 ranks without padding rows
    c.init = init;
    return c;
}

class InitRules : public ::testing::TestWithParam<int> {};

TEST_P(InitRules, Gpt2DrawsItsStatistics) {
    ModelConfig c = small("gpt2");
    c.tied_head = false;  // an lm_head too
    check_rule(c, gpt2_rule, GetParam());
}

TEST_P(InitRules, GptjDrawsTruncatedNormalsWithTwoOverLOutputProjections) {
    ModelConfig c = small("gptj");
    c.block = "parallel", c.tied_head = false, c.head_bias = true;
    check_rule(c, gptj_rule, GetParam());
    c.position = "t5_bias";  // the bias table: TruncatedNormal(0.02) as the seed
    check_rule(c, gptj_rule, GetParam());
}

TEST_P(InitRules, TransformerVqDrawsUnitNormalEmbeddings) {
    ModelConfig c = small("vq");
    c.attention = "vq", c.mlp = "none", c.norm = "rmsnorm", c.norm_bias = false;
    c.position = "none", c.tied_head = false, c.n_head = 1;
    c.vq_codes = 32, c.vq_d_k = 32, c.vq_block_len = 16;
    check_rule(c, vq_rule, GetParam());
}

// The enwik8 config draws as the seed (two of its 48 blocks, to keep the draw small).
TEST(InitRules, VqEnwik8UsesTransformerVqsInit) {
    const Config c =
        load_config(test::source_dir() + "/configs/vq-enwik8.yaml", {"model.n_layer=2"});
    EXPECT_EQ(c.model.init, "vq");
    check_rule(c.model, vq_rule, 1);
}

INSTANTIATE_TEST_SUITE_P(ModelRanks, InitRules, ::testing::Values(1, 2),
                         [](const auto& info) { return "model" + std::to_string(info.param); });

}  // namespace
}  // namespace meshlm

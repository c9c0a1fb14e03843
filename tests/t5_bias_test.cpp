// T5's bucketed relative position bias (model.position t5_bias, model/t5_bias.h): the buckets
// against transformers' (fixtures/t5_buckets.txt from tools/reference/t5_bucket_reference.py),
// the attention kernels' distance bias against a double reference and finite differences (its
// gradient and the queries', keys' and values'), the KV-cache decoder's steps against the full
// forward past max_distance, and the config errors. The whole model against PyTorch autograd is
// transformer_reference_test's t5_bias case; over 2 and 4 model ranks tp_mpi_test's t5 family.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kernel_check.h"
#include "meshlm/core/error.h"
#include "meshlm/core/rng.h"
#include "meshlm/core/threads.h"
#include "meshlm/model/decoder.h"
#include "meshlm/model/t5_bias.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"
#include "test_util.h"

namespace meshlm {
namespace {

using namespace test;

TEST(T5Bias, BucketsAreTransformers) {
    std::ifstream in(fixture("t5_buckets.txt"));
    ASSERT_TRUE(in) << "missing fixture t5_buckets.txt";
    int settings = 0;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream s(line);
        int nb = 0, md = 0, want = 0;
        s >> nb >> md;
        for (int d = 0; s >> want; ++d)
            ASSERT_EQ(t5_bucket(d, nb, md), want) << nb << " buckets, max " << md << ", d " << d;
        ++settings;
    }
    EXPECT_EQ(settings, 4);
}

// Causal softmax(s q k^T + bias[h, i - j]) v with GQA in double: out [B, T, H D], lse [B, H, T].
void reference(std::vector<double>& out, std::vector<double>& lse, const std::vector<float>& qkv,
               const std::vector<float>& bias, int B, int T, int H, int K, int D) {
    const int ld = (H + 2 * K) * D;
    const double s = 1 / std::sqrt(double(D));
    out.assign(std::size_t(B) * T * H * D, 0.0);
    lse.assign(std::size_t(B) * H * T, 0.0);
    std::vector<double> sc(T);
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h) {
            const int g = h / (H / K);
            for (int i = 0; i < T; ++i) {
                const float* q = &qkv[std::size_t(b * T + i) * ld + h * D];
                double mx = -INFINITY;
                for (int j = 0; j <= i; ++j) {
                    const float* k = &qkv[std::size_t(b * T + j) * ld + (H + g) * D];
                    double d = 0;
                    for (int c = 0; c < D; ++c) d += double(q[c]) * k[c];
                    sc[j] = s * d + bias[std::size_t(h) * T + (i - j)];
                    mx = std::max(mx, sc[j]);
                }
                double sum = 0;
                for (int j = 0; j <= i; ++j) sum += std::exp(sc[j] - mx);
                const double l = mx + std::log(sum);
                lse[std::size_t(b * H + h) * T + i] = l;
                for (int j = 0; j <= i; ++j) {
                    const float* v = &qkv[std::size_t(b * T + j) * ld + (H + K + g) * D];
                    for (int c = 0; c < D; ++c)
                        out[std::size_t(b * T + i) * H * D + h * D + c] +=
                            std::exp(sc[j] - l) * v[c];
                }
            }
        }
}

// T = 70 crosses the kernels' 64-row blocks; on 2 threads the backward splits the query blocks
// into chunks, whose distance-gradient partial rows are summed afterwards.
TEST(T5Bias, AttentionKernelsMatchDoubleAndFiniteDifferences) {
    const int B = 2, T = 70, H = 4, K = 2, D = 8, ld = (H + 2 * K) * D;
    auto qkv = randn(std::size_t(B) * T * ld, 61);
    auto bias = randn(std::size_t(H) * T, 62);
    auto R = randn(std::size_t(B) * T * H * D, 63);
    std::vector<float> out(R.size()), lse(std::size_t(B) * H * T);
    kn::DistanceBias dist;
    dist.bias = bias.data();
    dist.ld = T;
    auto objective = [&] {
        kn::attention_forward(out.data(), lse.data(), qkv.data(), B, T, H, K, D, nullptr, nullptr,
                              0.f, &dist);
        return dot(out, R);
    };
    objective();
    std::vector<double> out_ref, lse_ref;
    reference(out_ref, lse_ref, qkv, bias, B, T, H, K, D);
    expect_close("t5 attention out", out, out_ref, {1e-5, 0});
    expect_close("t5 attention lse", lse, lse_ref, {1e-5, 1e-6});

    auto dqkv = nan_filled(qkv.size());
    auto dbias = accumulate_pattern(bias.size());  // "+=": the kernel adds
    dist.grad = dbias.data();
    kn::attention_backward(dqkv.data(), R.data(), out.data(), lse.data(), qkv.data(), B, T, H, K, D,
                           nullptr, nullptr, 0.f, &dist);
    dist.grad = nullptr;
    // A bias entry of distance d moves B (T - d) scores of size ~1 in outputs of size < 1, the
    // rounding of L ~ sqrt(T D) few 2^-24 |out R| / (2h) ~ 1e-4, as the attention test's.
    check_gradient("t5 dbias", bias, added(dbias), objective, kStep, {5e-4, 1e-3});
    std::vector<std::size_t> probes;
    for (int t : {0, 1, 5, 63, 64, 69})
        for (int c : {0, H * D / 2 + 3, (H + K) * D + 5, ld - 1})
            probes.push_back(std::size_t(T + t) * ld + c);  // row b = 1
    check_gradient("t5 dqkv", qkv, to_double(dqkv), objective, kStep, {5e-4, 1e-3}, probes);
}

ModelConfig t5_model() {
    ModelConfig c;
    c.n_layer = 2, c.d_model = 32, c.n_head = 4, c.n_kv_head = 2, c.vocab_size = 61;
    c.max_seq_len = 48, c.position = "t5_bias", c.t5_buckets = 8, c.t5_max_distance = 12;
    c.init_std = 0.2f;  // large weights: peaked attention, differences visible
    return c;
}

// Step logits at every position, past max_distance (where the decode kernel reads the last
// row of its table), against the full forward on the whole sequence.
TEST(T5Bias, KvDecoderStepsMatchTheFullForward) {
    set_thread_count(2);
    const ModelConfig cfg = t5_model();
    const ParamLayout layout = transformer_layout(cfg);
    std::vector<float> params(layout.total());
    init_params(cfg, layout, params.data(), 5);
    // The bias table large, so a wrong bucket or distance shows in the logits.
    const ParamSlice& t5 = *layout.find("t5.rel_bias");
    Philox rng(3, 4);
    for (std::size_t i = 0; i < t5.numel; ++i) params[t5.offset + i] = 2.f * rng.normal();
    const int T = 40, V = cfg.vocab_size;
    std::vector<std::int32_t> seq(T);
    for (int t = 0; t < T; ++t) seq[t] = (7 * t + 3) % V;
    Transformer model(cfg, 1, T);
    model.forward(params.data(), seq.data(), nullptr, 1, T);
    Decoder dec(cfg, 1, T);
    const float* got = dec.prefill(params.data(), seq.data(), 1, 1);
    double err = 0, scale = 1e-6;
    for (int t = 0; t < T; ++t) {
        if (t > 0) got = dec.step(params.data(), &seq[t]);
        for (int v = 0; v < V; ++v) {
            const double want = model.logits()[std::size_t(t) * model.logits_stride() + v];
            err = std::max(err, std::fabs(got[v] - want));
            scale = std::max(scale, std::fabs(want));
        }
    }
    EXPECT_LT(err / scale, 2e-5);
}

void expect_invalid(const ModelConfig& c, const std::string& part) {
    try {
        check_model_config(c);
        ADD_FAILURE() << "no error; expected one containing \"" << part << "\"";
    } catch (const InvalidInput& e) {
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
}

TEST(T5Bias, ConfigErrorsNameTheKey) {
    ModelConfig c = t5_model();
    c.t5_max_distance = 4;
    expect_invalid(c, "model.t5.max_distance (4) must exceed model.t5.num_buckets / 2 = 4");
    c = t5_model();
    c.attn_act = "sqrelu";
    expect_invalid(c, "model.position t5_bias needs model.attn_act softmax (got sqrelu)");
    c = t5_model();
    c.t5_buckets = 1;
    expect_invalid(c, "model.t5.num_buckets must be at least 2");
    c = t5_model();
    c.position = "t5";
    expect_invalid(c, "model.position must be one of learned, rope, alibi, t5_bias, none");
}

}  // namespace
}  // namespace meshlm

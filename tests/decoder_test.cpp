// The KV-cache decoder against the full forward pass (Transformer::forward) and against
// transformers' logits (tests/fixtures/hf_generate_tiny.safetensors,
// tools/reference/hf_generate_reference.py): every position's next-token logits, for several
// sequences decoded together, some of them skipped part of the way; the per-sequence prefill; the
// bf16 path; the decode kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "meshlm/core/threads.h"
#include "meshlm/io/safetensors.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/model/decoder.h"
#include "meshlm/model/transformer_layout.h"
#include "test_util.h"

namespace meshlm {
namespace {

// Max |a - b| over max |b|: error relative to the row's scale.
double scaled_error(const float* a, const float* b, int n) {
    double err = 0, scale = 1e-6;
    for (int i = 0; i < n; ++i) {
        err = std::max(err, std::fabs(double(a[i]) - b[i]));
        scale = std::max(scale, std::fabs(double(b[i])));
    }
    return err / scale;
}

class KvDecoder : public ::testing::Test {
  protected:
    void SetUp() override {
        set_thread_count(2);
        file_ = std::make_unique<SafetensorsFile>(test::fixture("hf_generate_tiny.safetensors"));
        const auto& md = file_->metadata();
        auto i = [&](const char* k) { return std::stoi(md.at(k)); };
        cfg_.n_layer = i("n_layer");
        cfg_.d_model = i("d_model");
        cfg_.n_head = i("n_head");
        cfg_.vocab_size = i("vocab_size");
        cfg_.max_seq_len = i("max_seq_len");
        ParamLayout layout = transformer_layout(cfg_);
        params_.assign(layout.total(), 0.f);
        for (const auto& s : layout.slices()) {
            auto v = file_->f32("param." + s.name, &s.shape);
            std::copy(v.begin(), v.end(), params_.begin() + s.offset);
        }
    }

    // Full-forward logits of one sequence, (T, V).
    std::vector<float> forward(const std::vector<std::int32_t>& seq) {
        const int T = static_cast<int>(seq.size());
        Transformer model(cfg_, 1, T);
        model.forward(params_.data(), seq.data(), nullptr, 1, T);
        return {model.logits(), model.logits() + static_cast<std::size_t>(T) * cfg_.vocab_size};
    }

    std::vector<std::int32_t> concat(const std::vector<std::int32_t>& a,
                                     const std::vector<std::int32_t>& b) {
        std::vector<std::int32_t> out = a;
        out.insert(out.end(), b.begin(), b.end());
        return out;
    }

    ModelConfig cfg_;
    std::unique_ptr<SafetensorsFile> file_;
    std::vector<float> params_;
};

TEST_F(KvDecoder, StepLogitsEqualFullForwardAndTransformersAtEveryPosition) {
    const int V = cfg_.vocab_size;
    auto prompt = file_->i32("prompt_0");
    const int P = static_cast<int>(prompt.size());
    // Three continuations of the same prompt; sequence 1 is skipped from step 10 on.
    std::vector<std::vector<std::int32_t>> seqs = {concat(prompt, file_->i32("greedy_0")),
                                                   concat(prompt, file_->i32("penalty_0")),
                                                   concat(prompt, file_->i32("greedy_1"))};
    const int T = static_cast<int>(seqs[0].size()), S = 3, skip_from = P + 10;
    std::vector<std::vector<float>> full;
    for (const auto& s : seqs) full.push_back(forward(s));
    auto hf = file_->f32("logits_0");  // transformers on seqs[0]

    Decoder dec(cfg_, S);
    const float* logits = dec.prefill(params_.data(), prompt.data(), P);
    double worst = 0, worst_hf = 0;
    for (int t = P - 1; t < T; ++t) {  // logits predicting position t + 1
        for (int s = 0; s < S; ++s) {
            if (s == 1 && t >= skip_from) continue;
            const float* row = logits + static_cast<std::size_t>(s) * V;
            double err = scaled_error(row, full[s].data() + static_cast<std::size_t>(t) * V, V);
            EXPECT_LT(err, 1e-5) << "sequence " << s << " position " << t;
            worst = std::max(worst, err);
        }
        worst_hf = std::max(worst_hf, scaled_error(logits, hf.data() + std::size_t(t) * V, V));
        if (t + 1 == T) break;
        std::vector<std::int32_t> next(S);
        for (int s = 0; s < S; ++s) next[s] = s == 1 && t + 1 >= skip_from ? -1 : seqs[s][t + 1];
        logits = dec.step(params_.data(), next.data());
        EXPECT_EQ(dec.position(), t + 2);
    }
    EXPECT_LT(worst_hf, 1e-5) << "against transformers";
    std::printf("  max error vs full forward %.2e, vs transformers %.2e\n", worst, worst_hf);
}

TEST_F(KvDecoder, PrefillOfOneRowPerSequenceThenSteps) {
    const int V = cfg_.vocab_size, S = 2, T0 = 8;
    std::vector<std::int32_t> a = concat(file_->i32("prompt_1"), file_->i32("greedy_1"));
    std::vector<std::int32_t> b = concat(file_->i32("prompt_0"), file_->i32("penalty_0"));
    std::vector<std::int32_t> rows(a.begin(), a.begin() + T0);
    rows.insert(rows.end(), b.begin(), b.begin() + T0);
    auto fa = forward(a), fb = forward(b);
    Decoder dec(cfg_, S);
    const float* logits = dec.prefill(params_.data(), rows.data(), T0, S);
    for (int t = T0 - 1; t < T0 + 6; ++t) {
        EXPECT_LT(scaled_error(logits, fa.data() + std::size_t(t) * V, V), 1e-5) << t;
        EXPECT_LT(scaled_error(logits + V, fb.data() + std::size_t(t) * V, V), 1e-5) << t;
        std::int32_t next[S] = {a[t + 1], b[t + 1]};
        logits = dec.step(params_.data(), next);
    }
}

TEST_F(KvDecoder, Bf16WeightsStayCloseToFp32) {
    const int V = cfg_.vocab_size;
    auto seq = concat(file_->i32("prompt_1"), file_->i32("greedy_1"));
    auto full = forward(seq);
    Decoder dec(cfg_, 1, 0, DecodePrecision::bf16);
    const int P = 11;
    dec.prefill(params_.data(), seq.data(), P);
    double worst = 0;
    for (int t = P; t + 1 < static_cast<int>(seq.size()); ++t) {
        const float* logits = dec.step(params_.data(), &seq[t]);
        worst = std::max(worst, scaled_error(logits, full.data() + std::size_t(t) * V, V));
    }
    // bf16 keeps 8 significant bits: errors of a few 1e-3 of the logits' scale, not 1e-7.
    EXPECT_LT(worst, 3e-2);
    EXPECT_GT(worst, 1e-6) << "the bf16 path seems to read fp32 weights";
    std::printf("  bf16 max error vs fp32 forward %.2e\n", worst);
}

TEST_F(KvDecoder, RejectsOverflowAndBadTokens) {
    Decoder dec(cfg_, 1, 4);
    std::vector<std::int32_t> p = {1, 2, 3, 4};
    dec.prefill(params_.data(), p.data(), 4);
    std::int32_t next = 5;
    EXPECT_THROW(dec.step(params_.data(), &next), Error);  // the cache is full
    std::vector<std::int32_t> bad = {1, cfg_.vocab_size};
    EXPECT_THROW(dec.prefill(params_.data(), bad.data(), 2), Error);
}

// The skinny linear against a double-precision reference, and its promise that a row's result
// does not depend on how many rows are computed together.
TEST(DecodeKernels, LinearDecodeMatchesReferenceAndIgnoresBatchSize) {
    set_thread_count(2);
    const int I = 37, O = 23, Mmax = 6;
    std::mt19937 gen(7);
    std::normal_distribution<float> nd;
    std::vector<float> x(Mmax * I), W(O * I), bias(O);
    for (auto* v : {&x, &W, &bias})
        for (float& f : *v) f = nd(gen);
    std::vector<std::uint16_t> W16(W.size());
    kernels::to_bf16(W16.data(), W.data(), W.size());
    std::vector<float> all(Mmax * O), all16(Mmax * O);
    kernels::linear_decode(all.data(), x.data(), W.data(), bias.data(), Mmax, I, O);
    kernels::linear_decode_bf16(all16.data(), x.data(), W16.data(), bias.data(), Mmax, I, O);
    for (int m = 0; m < Mmax; ++m)
        for (int o = 0; o < O; ++o) {
            double ref = bias[o], ref16 = bias[o];
            for (int i = 0; i < I; ++i) {
                ref += double(x[m * I + i]) * W[o * I + i];
                std::uint32_t u = std::uint32_t(W16[o * I + i]) << 16;
                float w16;
                std::memcpy(&w16, &u, 4);
                ref16 += double(x[m * I + i]) * w16;
                EXPECT_NEAR(w16, W[o * I + i], std::fabs(W[o * I + i]) / 256);
            }
            EXPECT_NEAR(all[m * O + o], ref, 1e-4);
            EXPECT_NEAR(all16[m * O + o], ref16, 1e-4);
        }
    for (int M = 1; M <= Mmax; ++M) {
        std::vector<float> y(M * O);
        // The last M rows of x, so each row sits at a different place in the tiles.
        kernels::linear_decode(y.data(), x.data() + (Mmax - M) * I, W.data(), bias.data(), M, I, O);
        for (int i = 0; i < M * O; ++i) ASSERT_EQ(y[i], all[(Mmax - M) * O + i]) << "M=" << M;
    }
    set_thread_count(1);
    std::vector<float> one(Mmax * O);
    kernels::linear_decode(one.data(), x.data(), W.data(), bias.data(), Mmax, I, O);
    EXPECT_EQ(one, all) << "thread count changed the result";
    set_thread_count(2);
}

}  // namespace
}  // namespace meshlm

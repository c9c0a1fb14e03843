// Generation over the KV cache: greedy and repetition-penalty greedy equal transformers'
// generate token for token (tests/fixtures/hf_generate_tiny.safetensors); sample i does not
// depend on how many samples run together; the context window slides like a recompute would;
// stop strings and the repetition penalty on their own.
#include <gtest/gtest.h>

#include "meshlm/core/threads.h"
#include "meshlm/infer/generate.h"
#include "meshlm/infer/stop_strings.h"
#include "meshlm/io/safetensors.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/model/transformer_layout.h"
#include "test_util.h"

namespace meshlm {
namespace {

class Generate : public ::testing::Test {
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
        num_prompts_ = i("num_prompts");
        max_new_ = i("max_new_tokens");
        penalty_ = std::stof(md.at("repetition_penalty"));
        ParamLayout layout = transformer_layout(cfg_);
        params_.assign(layout.total(), 0.f);
        for (const auto& s : layout.slices()) {
            auto v = file_->f32("param." + s.name, &s.shape);
            std::copy(v.begin(), v.end(), params_.begin() + s.offset);
        }
    }

    SamplingOptions greedy() const {
        SamplingOptions opt;
        opt.temperature = 0.f;
        opt.max_new_tokens = max_new_;
        opt.stop_at_eot = false;  // the fixture has no end-of-text
        return opt;
    }

    ModelConfig cfg_;
    std::unique_ptr<SafetensorsFile> file_;
    std::vector<float> params_;
    int num_prompts_ = 0, max_new_ = 0;
    float penalty_ = 1.f;
};

TEST_F(Generate, GreedyEqualsTransformers) {
    for (int p = 0; p < num_prompts_; ++p) {
        auto prompt = file_->i32("prompt_" + std::to_string(p));
        auto expect = file_->i32("greedy_" + std::to_string(p));
        Decoder dec(cfg_, 1);
        auto out = generate_samples(dec, params_.data(), prompt, -1, greedy());
        EXPECT_EQ(out[0].tokens, expect) << "prompt " << p;
        EXPECT_EQ(out[0].reason, StopReason::max_tokens);
        // The original entry point gives the same tokens and streams them in order.
        std::vector<std::int32_t> streamed;
        auto legacy = generate(cfg_, params_.data(), prompt, -1, greedy(),
                               [&](std::int32_t id) { streamed.push_back(id); });
        EXPECT_EQ(legacy, expect);
        EXPECT_EQ(streamed, expect);
    }
}

TEST_F(Generate, RepetitionPenaltyGreedyEqualsTransformers) {
    SamplingOptions opt = greedy();
    opt.repetition_penalty = penalty_;
    for (int p = 0; p < num_prompts_; ++p) {
        auto prompt = file_->i32("prompt_" + std::to_string(p));
        Decoder dec(cfg_, 2);  // two identical greedy samples, batched
        auto out = generate_samples(dec, params_.data(), prompt, -1, opt);
        EXPECT_EQ(out[0].tokens, file_->i32("penalty_" + std::to_string(p))) << "prompt " << p;
        EXPECT_EQ(out[1].tokens, out[0].tokens);
    }
}

TEST_F(Generate, SampleIDoesNotDependOnHowManyRunTogether) {
    SamplingOptions opt;
    opt.temperature = 1.2f;
    opt.top_k = 40;
    opt.top_p = 0.95f;
    opt.max_new_tokens = 25;
    opt.seed = 77;
    auto prompt = file_->i32("prompt_1");
    auto run = [&](int n, const TokenCallback& cb = {}) {
        Decoder dec(cfg_, n);
        return generate_samples(dec, params_.data(), prompt, 3, opt, cb);
    };
    auto one = run(1), two = run(2), three = run(3);
    EXPECT_EQ(one[0].tokens, three[0].tokens);
    EXPECT_EQ(two[0].tokens, three[0].tokens);
    EXPECT_EQ(two[1].tokens, three[1].tokens);
    EXPECT_NE(three[0].tokens, three[1].tokens);  // distinct streams
    EXPECT_NE(three[1].tokens, three[2].tokens);
    // Ending sample 1 early (a stop string, say) leaves the others unchanged.
    auto cut = run(3, [](int s, std::int32_t) { return s != 1; });
    EXPECT_EQ(cut[1].tokens.size(), 1u);
    EXPECT_EQ(cut[1].reason, StopReason::callback);
    EXPECT_EQ(cut[0].tokens, three[0].tokens);
    EXPECT_EQ(cut[2].tokens, three[2].tokens);
    // Another seed, other samples.
    opt.seed = 78;
    EXPECT_NE(run(1)[0].tokens, one[0].tokens);
}

TEST_F(Generate, TypicalAndEtaFilterEverySample) {
    SamplingOptions opt;
    opt.temperature = 1.f;
    opt.max_new_tokens = 20;
    opt.seed = 5;
    auto prompt = file_->i32("prompt_1");
    auto run = [&](int n) {
        Decoder dec(cfg_, n);
        return generate_samples(dec, params_.data(), prompt, 3, opt);
    };
    // A tiny typical mass keeps one token per step: every stream draws the same text.
    opt.typical_p = 1e-6f;
    auto one_each = run(3);
    EXPECT_EQ(one_each[0].tokens, one_each[1].tokens);
    EXPECT_EQ(one_each[0].tokens, one_each[2].tokens);
    // Composed with eta, still sampled, and sample i the same whatever runs beside it.
    opt.typical_p = 0.9f, opt.eta_cutoff = 0.02f;
    auto three = run(3);
    EXPECT_EQ(run(1)[0].tokens, three[0].tokens);
    EXPECT_NE(three[0].tokens, three[1].tokens);
}

TEST_F(Generate, StopsAtEndOfText) {
    // Call the first new id of the greedy run after its 3rd token the end-of-text.
    auto prompt = file_->i32("prompt_1");
    auto expect = file_->i32("greedy_1");
    std::size_t k = 3;
    while (std::find(expect.begin(), expect.begin() + k, expect[k]) != expect.begin() + k) ++k;
    SamplingOptions opt = greedy();
    opt.stop_at_eot = true;
    Decoder dec(cfg_, 1);
    auto out = generate_samples(dec, params_.data(), prompt, expect[k], opt);
    ASSERT_EQ(out[0].reason, StopReason::eot);
    EXPECT_EQ(out[0].tokens, std::vector<std::int32_t>(expect.begin(), expect.begin() + k));
}

// Past the context, the window slides by half: the same tokens as recomputing the window with
// the full forward pass, dropping the oldest half whenever it overflows.
TEST_F(Generate, ContextWindowSlidesLikeARecompute) {
    const int ctx = cfg_.max_seq_len, n_new = ctx + ctx / 2 + 5;
    auto prompt = file_->i32("prompt_1");
    SamplingOptions opt = greedy();
    opt.max_new_tokens = n_new;
    Decoder dec(cfg_, 1);
    auto out = generate_samples(dec, params_.data(), prompt, -1, opt);
    ASSERT_EQ(static_cast<int>(out[0].tokens.size()), n_new);

    std::vector<std::int32_t> window = prompt, expect;
    Transformer model(cfg_, 1, ctx);
    const int V = cfg_.vocab_size;
    for (int i = 0; i < n_new; ++i) {
        const int T = static_cast<int>(window.size());
        model.forward(params_.data(), window.data(), nullptr, 1, T);
        const float* row = model.logits() + static_cast<std::size_t>(T - 1) * V;
        std::int32_t tok = static_cast<std::int32_t>(std::max_element(row, row + V) - row);
        expect.push_back(tok);
        window.push_back(tok);
        if (static_cast<int>(window.size()) > ctx)
            window.erase(window.begin(), window.end() - ctx / 2);
    }
    EXPECT_EQ(out[0].tokens, expect);
}

TEST(RepetitionPenalty, DividesPositiveAndMultipliesOtherLogitsOfSeenIds) {
    std::vector<float> z = {2.f, -1.f, 0.f, 3.f, -4.f};
    apply_repetition_penalty(z.data(), {0, 1, 2}, 2.f);
    EXPECT_EQ(z, (std::vector<float>{1.f, -2.f, 0.f, 3.f, -4.f}));
}

TEST(StopStrings, CutsBeforeTheStopAndHoldsBackOnlyPossiblePrefixes) {
    StopStrings s({"\n\n", "END"});
    std::string out;
    out += s.feed("Hello");
    EXPECT_EQ(out, "Hello");
    out += s.feed(" E");  // "E" may begin "END": held back
    EXPECT_EQ(out, "Hello ");
    out += s.feed("Nx\n");  // "ENx" is not a stop; "\n" may begin "\n\n"
    EXPECT_EQ(out, "Hello ENx");
    out += s.feed("\nmore");
    EXPECT_TRUE(s.stopped());
    EXPECT_EQ(out, "Hello ENx");
    EXPECT_EQ(s.feed("anything"), "");
    EXPECT_EQ(s.flush(), "");

    StopStrings t({"abc"});
    EXPECT_EQ(t.feed("xxab"), "xx");
    EXPECT_EQ(t.flush(), "ab");  // the end of the text releases what was held
    StopStrings u({"abc"});
    std::string first = u.feed("zab");
    EXPECT_EQ(first + u.feed("cdef"), "z");  // a stop across two pieces
    EXPECT_TRUE(u.stopped());
    StopStrings none({});
    EXPECT_EQ(none.feed("abc"), "abc");
}

}  // namespace
}  // namespace meshlm

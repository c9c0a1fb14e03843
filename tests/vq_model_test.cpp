// A Transformer-VQ model (model.attention vq) end to end: constant-memory decoding equals a full
// forward over the same text far past the training context, the codebook moves by its moving
// average of each step's statistics (never by the optimizer), and the options it cannot take are
// refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/core/model_comm.h"
#include "meshlm/core/rng.h"
#include "meshlm/core/threads.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/model/decoder.h"
#include "meshlm/model/embedding.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"
#include "meshlm/optim/optim_config.h"
#include "meshlm/train/chunked_losses.h"
#include "meshlm/train/learner.h"

namespace meshlm {
namespace {

ModelConfig tiny_vq(const std::string& mlp = "none", const std::string& position = "none") {
    ModelConfig m;
    m.n_layer = 2, m.d_model = 32, m.n_head = 1, m.vocab_size = 61, m.max_seq_len = 16;
    m.attention = "vq", m.mlp = mlp, m.norm = "rmsnorm", m.norm_bias = false;
    m.position = position, m.init = "fan_in", m.tied_head = false;
    m.vq_pe_lam = 64.f;  // scaled sinusoids: wavelengths a short text spans
    m.vq_block_len = 4, m.vq_codes = 8, m.vq_d_k = 8, m.vq_d_v = 32;
    return m;
}

// The scaled sinusoids' scale starts at 0 (no positions at all): set it where it exists.
void set_pe_scale(const ModelConfig& m, float* params, float scale) {
    const ParamLayout layout = transformer_layout(m);
    if (const ParamSlice* s = layout.find("wpe.scale")) params[s->offset] = scale;
}

std::vector<float> random_params(const ModelConfig& m, std::uint64_t seed) {
    const ParamLayout layout = transformer_layout(m);
    std::vector<float> p(layout.total());
    init_params(m, layout, p.data(), seed);
    set_pe_scale(m, p.data(), 0.8f);
    return p;
}

std::vector<std::int32_t> random_tokens(int n, int V, std::uint64_t seed) {
    Philox rng(seed, 0);
    std::vector<std::int32_t> t(n);
    for (auto& x : t) x = static_cast<std::int32_t>(rng.uniform() * V) % V;
    return t;
}

double max_rel(const float* a, const float* b, int n) {
    double err = 0, scale = 1e-3;
    for (int i = 0; i < n; ++i)
        err = std::max(err, static_cast<double>(std::fabs(a[i] - b[i]))),
        scale = std::max(scale, static_cast<double>(std::fabs(b[i])));
    return err / scale;
}

TEST(VqModel, DecodingEqualsAFullForwardFarPastTheContextInConstantMemory) {
    set_thread_count(2);
    const std::pair<const char*, const char*> kinds[] = {
        {"none", "none"}, {"sqrelu", "none"}, {"none", "scaled_sin"}};
    for (const auto& [mlp, position] : kinds) {
        SCOPED_TRACE(std::string(mlp) + " " + position);
        const ModelConfig m = tiny_vq(mlp, position);
        const std::vector<float> params = random_params(m, 3);
        const int T = 4 * m.max_seq_len, V = m.vocab_size, prompt = 5;
        const std::vector<std::int32_t> text = random_tokens(T, V, 9);
        // The whole text in one forward (no learned positions: any length runs).
        Transformer full(m, 1, T);
        full.forward(params.data(), text.data(), nullptr, 1, T);

        Decoder dec(m, 2);
        const float* logits = dec.prefill(params.data(), text.data(), prompt, 1);
        for (int s = 0; s < 2; ++s)
            EXPECT_LT(max_rel(logits + s * V, full.logits() + (prompt - 1) * V, V), 1e-5);
        std::vector<std::size_t> bytes(T + 1, 0);
        for (int t = prompt; t < T; ++t) {
            const std::int32_t both[2] = {text[t], text[t]};
            logits = dec.step(params.data(), both);
            ASSERT_LT(max_rel(logits + V, full.logits() + static_cast<std::size_t>(t) * V, V), 1e-5)
                << "position " << t;
            bytes[t + 1] = dec.state_bytes();
        }
        // What a sequence carries depends on its position within a block only: the same at
        // every multiple of the block past the first two blocks, however long the text.
        const int L = m.vq_block_len;
        for (int t = 3 * L; t + L <= T; ++t) EXPECT_EQ(bytes[t], bytes[t + L]) << "position " << t;
        const std::size_t bound = static_cast<std::size_t>(m.n_layer) * 2 *
                                  ((2 * L - 1) * (m.vq_d_v + 1) + m.vq_codes * (m.vq_d_v + 1)) *
                                  sizeof(float);
        EXPECT_LE(*std::max_element(bytes.begin(), bytes.end()), bound);

        // A prompt longer than max_seq_len runs in pieces: the same next-token logits.
        Decoder long_prompt(m, 1);
        const int P = 3 * m.max_seq_len + 3;
        logits = long_prompt.prefill(params.data(), text.data(), P, 1);
        EXPECT_LT(max_rel(logits, full.logits() + static_cast<std::size_t>(P - 1) * V, V), 1e-5);
    }
}

TEST(VqModel, IsCausal) {
    // Changing the token at position t changes no logit before t, and changes the logits from
    // t on, in each precision.
    set_thread_count(2);
    const ModelConfig m = tiny_vq("sqrelu");
    const std::vector<float> params = random_params(m, 5);
    const int B = 2, T = 16, V = m.vocab_size;
    const std::vector<std::int32_t> base = random_tokens(B * T, V, 12);
    for (Precision p : {Precision::fp32, Precision::bf16}) {
        Transformer model(m, B, T, nullptr, Recompute::none, p);
        model.forward(params.data(), base.data(), nullptr, B, T);
        const std::vector<float> ref(model.logits(), model.logits() + B * T * V);
        for (int t : {0, 3, 4, 9, 15}) {
            std::vector<std::int32_t> tokens = base;
            tokens[T + t] = (tokens[T + t] + 1) % V;  // row 1
            model.forward(params.data(), tokens.data(), nullptr, B, T);
            const float* got = model.logits();
            for (std::size_t i = 0; i < static_cast<std::size_t>(T + t) * V; ++i)
                ASSERT_EQ(got[i], ref[i]) << "logit " << i << " saw row 1 position " << t;
            double changed = 0;
            for (int i = 0; i < V; ++i)
                changed += std::fabs(got[(T + t) * V + i] - ref[(T + t) * V + i]);
            EXPECT_GT(changed, 1e-3) << "position " << t;
        }
    }
}

TEST(VqModel, CodebookMovesByItsMovingAverageOfTheStepsStatistics) {
    set_thread_count(2);
    ModelConfig m = tiny_vq("sqrelu");
    m.vq_c_gamma = 0.75f;
    OptimConfig o;
    o.weight_decay = 0.5f;  // would shrink the codebook if the optimizer reached it
    const int B = 2, T = 16, accum = 2;
    Learner learner(m, o, B, T, 10);
    learner.init_params(4);
    const ParamLayout& layout = learner.layout();
    const std::vector<float> before(learner.params(), learner.params() + layout.total());
    const std::vector<std::int32_t> tokens = random_tokens(accum * B * T, m.vocab_size, 5);
    const std::vector<std::int32_t> targets = random_tokens(accum * B * T, m.vocab_size, 6);
    learner.train_step(tokens.data(), targets.data(), accum);
    const float* after = learner.params();
    int codebooks = 0;
    for (const ParamSlice& s : layout.slices()) {
        if (s.name.find("vq.c_") == std::string::npos) {
            EXPECT_EQ(s.ema_decay, 0.f) << s.name;
            continue;
        }
        EXPECT_EQ(s.ema_decay, 0.75f) << s.name;
        EXPECT_FALSE(s.decay) << s.name;
        if (s.name.find("c_count") == std::string::npos) continue;
        ++codebooks;
        // count' = gamma count + (1 - gamma) n_s: every n_s a whole number of tokens, all of
        // the step's tokens (both micro-batches) assigned once.
        double total = 0;
        for (std::size_t i = 0; i < s.numel; ++i) {
            const double n = (after[s.offset + i] - 0.75 * before[s.offset + i]) / 0.25;
            EXPECT_NEAR(n, std::round(n), 1e-4) << s.name << "[" << i << "]";
            total += n;
        }
        EXPECT_NEAR(total, accum * B * T, 1e-3) << s.name;
    }
    EXPECT_EQ(codebooks, m.n_layer);
}

TEST(VqModel, TruncatedBackpropagationCarriesTheStateBetweenSteps) {
    // Rows of 16 tokens in chunks of 8 (model.vq.update_len): the second step's loss is the
    // loss of those 8 tokens seen after the first 8 -- one forward over the whole rows -- not of
    // 8 tokens alone. The carried state was computed with the first step's weights before its
    // update (as in the seed), so the weights here barely move: a learning rate of 1e-12 and a
    // codebook decay of 1 - 1e-6.
    set_thread_count(2);
    for (const char* position : {"none", "scaled_sin"}) {
        SCOPED_TRACE(position);
        ModelConfig m = tiny_vq("sqrelu", position);
        m.vq_c_gamma = 0.999999f;
        const int B = 2, T = 16, U = 8, V = m.vocab_size;
        const std::vector<std::int32_t> tokens = random_tokens(B * T, V, 21);
        const std::vector<std::int32_t> targets = random_tokens(B * T, V, 22);
        auto chunk = [&](const std::vector<std::int32_t>& x, int c) {
            std::vector<std::int32_t> out;
            for (int b = 0; b < B; ++b)
                out.insert(out.end(), x.begin() + b * T + c * U, x.begin() + b * T + (c + 1) * U);
            return out;
        };
        OptimConfig o;
        o.lr = 1e-12f;
        Learner learner(m, o, B, U, 10);
        learner.init_params(4);
        set_pe_scale(m, learner.params(), 0.8f);  // the second chunk's positions start at U
        learner.set_vq_carry(true);
        learner.train_step(chunk(tokens, 0).data(), chunk(targets, 0).data(), 1);
        const ParamLayout& layout = learner.layout();
        const std::vector<float> after1(learner.params(), learner.params() + layout.total());
        const float carried =
            learner.train_step(chunk(tokens, 1).data(), chunk(targets, 1).data(), 1).loss;

        std::vector<std::int32_t> second_half = targets;
        for (int b = 0; b < B; ++b) std::fill_n(second_half.begin() + b * T, U, -1);
        Transformer full(m, B, T);
        const float whole = full.forward(after1.data(), tokens.data(), second_half.data(), B, T);
        EXPECT_NEAR(carried, whole, 1e-5 * whole);
        // Block recomputation reruns the linear-time pass from the states the forward started
        // from: the same two steps, bitwise.
        Learner again(m, o, B, U, 10, nullptr, 0, nullptr, Recompute::block);
        again.init_params(4);
        set_pe_scale(m, again.params(), 0.8f);
        again.set_vq_carry(true);
        again.train_step(chunk(tokens, 0).data(), chunk(targets, 0).data(), 1);
        const float rerun =
            again.train_step(chunk(tokens, 1).data(), chunk(targets, 1).data(), 1).loss;
        EXPECT_EQ(rerun, carried);
        EXPECT_EQ(std::vector<float>(again.params(), again.params() + layout.total()),
                  std::vector<float>(learner.params(), learner.params() + layout.total()));
        Transformer alone(m, B, U);
        const float fresh =
            alone.forward(after1.data(), chunk(tokens, 1).data(), chunk(targets, 1).data(), B, U);
        EXPECT_GT(std::fabs(fresh - whole), 1e-3) << "the carried state changes nothing";
    }
}

// Evaluation of rows longer than the model was planned for (model.vq.update_len): the rows run
// in chunks carrying the attention state, so every token's loss is the one a model planned for
// the whole rows gives it -- for ChunkedLosses over a bare Transformer (meshlm eval) and for a
// Learner planned for the chunk (evaluation during training).
TEST(VqModel, LongRowsEvaluateInChunksAsWholeRows) {
    set_thread_count(2);
    for (const char* position : {"none", "scaled_sin"}) {
        SCOPED_TRACE(position);
        const ModelConfig m = tiny_vq("sqrelu", position);
        const int B = 2, T = 16, U = 4, V = m.vocab_size;
        const std::vector<float> params = random_params(m, 8);
        const std::vector<std::int32_t> tokens = random_tokens(B * T, V, 31);
        std::vector<std::int32_t> targets = random_tokens(B * T, V, 32);
        targets[5] = -1;  // masked targets stay masked
        Transformer whole(m, B, T);
        whole.forward(params.data(), tokens.data(), targets.data(), B, T);
        const std::vector<float> want(whole.losses(), whole.losses() + B * T);

        Transformer small(m, B, U);
        int calls = 0;
        ChunkedLosses chunked(
            small, U,
            [&](const std::int32_t* tk, const std::int32_t* tg, int rows, int t) -> const float* {
                ++calls;
                if (rows == 0) return nullptr;
                EXPECT_EQ(t, U);
                small.forward(params.data(), tk, tg, rows, t);
                return small.losses();
            });
        for (int pass = 0; pass < 2; ++pass) {  // the second starts every row afresh again
            const float* got = chunked(tokens.data(), targets.data(), B, T);
            for (int n = 0; n < B * T; ++n)
                ASSERT_NEAR(got[n], want[n], 1e-5f * (1.f + std::fabs(want[n])))
                    << "token " << n << " pass " << pass;
        }
        EXPECT_EQ(calls, 2 * T / U);
        EXPECT_EQ(chunked(nullptr, nullptr, 0, T), nullptr);  // a rank without rows: collectives
        EXPECT_EQ(calls, 3 * T / U);
        EXPECT_THROW(chunked(tokens.data(), targets.data(), B, 10), InvalidInput);
        // Without the carried state the later chunks' losses differ: the check can fail.
        small.forward(params.data(), tokens.data() + U, targets.data() + U, 1, U);
        double moved = 0;
        for (int t = 0; t < U; ++t)
            moved = std::max(moved, double(std::fabs(small.losses()[t] - want[U + t])));
        EXPECT_GT(moved, 1e-3);

        // What `meshlm info` plans for the carried state is what a chunk boundary holds.
        std::vector<kernels::VqAttnState> states(static_cast<std::size_t>(m.n_layer) * B);
        small.set_vq_states(states.data(), B);
        for (int c = 0; c < 2; ++c)
            small.forward(params.data(), tokens.data() + c * U, targets.data() + c * U, B, U);
        small.set_vq_states(nullptr, 0);
        std::size_t held = 0;
        for (const auto& st : states)
            held += st.z.size() + st.v.size() + st.count.size() + st.mean.size();
        EXPECT_EQ(held, vq_carried_state_floats(m, B));

        OptimConfig o;
        Learner learner(m, o, B, U, 10);
        learner.init_params(1);  // allocates; then overwritten
        std::copy(params.begin(), params.end(), learner.params());
        learner.params_written();
        const float* got = learner.eval_losses(tokens.data(), targets.data(), B, T);
        for (int n = 0; n < B * T; ++n)
            ASSERT_NEAR(got[n], want[n], 1e-5f * (1.f + std::fabs(want[n])))
                << "learner, token " << n;
        EXPECT_LE(learner.activation_bytes(), Transformer(m, B, T).activation_bytes() / 2);
    }
}

// model.position scaled_sin: x[n] = wte[token] + scale sinusoid(p_n) with p_n = pos0[b] + t,
// against the formula written out here in double; the scale's gradient against central
// differences of a linear loss sum_n r[n].x[n] (exact for a linear map). (The model's own loss
// cannot be differenced: its quantized keys take the straight-through gradient.)
TEST(VqModel, ScaledSinusoidsAddTheScaledPositionAndTheirScaleGradient) {
    ModelConfig m = tiny_vq("none", "scaled_sin");
    m.vq_pe_lam = 1000.f;
    const int B = 2, T = 5, N = B * T, C = m.d_model, V = m.vocab_size;
    SingleRank one;
    const Embedding emb(m, one);
    std::vector<float> wte(static_cast<std::size_t>(V) * C);
    for (std::size_t i = 0; i < wte.size(); ++i) wte[i] = 0.01f * static_cast<float>(i % 97);
    const std::vector<std::int32_t> tok = random_tokens(N, V, 3);
    // Row 1 continues past the table's end (max_seq_len 16): computed on the fly the same way.
    const std::int64_t pos0[B] = {3, 40};
    const float scale = 0.7f;
    std::vector<float> x(static_cast<std::size_t>(N) * C);
    emb.forward(x.data(), tok.data(), wte.data(), nullptr, &scale, N, T, pos0);
    double err = 0;
    for (int n = 0; n < N; ++n)
        for (int c = 0; c < C; ++c) {
            const int j = c % (C / 2);
            const double p = static_cast<double>(pos0[n / T] + n % T),
                         a = p / std::pow(1000.0, 2.0 * j / C),
                         want = wte[static_cast<std::size_t>(tok[n]) * C + c] +
                                scale * (c < C / 2 ? std::sin(a) : std::cos(a));
            err = std::max(err, std::fabs(x[static_cast<std::size_t>(n) * C + c] - want));
        }
    EXPECT_LT(err, 1e-6);

    std::vector<float> r(x.size());
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = std::sin(0.37f * static_cast<float>(i));
    std::vector<float> dwte(wte.size(), 0.f);
    float dscale = 0.25f;  // accumulates
    emb.backward(dwte.data(), nullptr, &dscale, r.data(), tok.data(), N, T, pos0);
    auto loss = [&](float s) {
        std::vector<float> y(x.size());
        emb.forward(y.data(), tok.data(), wte.data(), nullptr, &s, N, T, pos0);
        double l = 0;
        for (std::size_t i = 0; i < y.size(); ++i) l += static_cast<double>(r[i]) * y[i];
        return l;
    };
    const double fd = (loss(scale + 0.5f) - loss(scale - 0.5f)) / 1.0;
    EXPECT_GT(std::fabs(fd), 0.1);
    EXPECT_NEAR(dscale - 0.25f, fd, 1e-5 * std::fabs(fd) + 1e-5);
}

// model.vq.reduction matmul makes every block's cache at once: the kernel gets it, and the
// model's loss and gradients are serial's up to rounding.
TEST(VqModel, MatmulReductionTrainsLikeSerial) {
    set_thread_count(2);
    ModelConfig m = tiny_vq("sqrelu");
    m.vq_reduction = "matmul";
    EXPECT_EQ(VqAttention(m).shape().reduction, kernels::VqReduction::matmul);
    const std::vector<float> p = random_params(m, 8);
    const int B = 3, T = 16;  // four blocks a row: three caches to make
    const std::vector<std::int32_t> x = random_tokens(B * T, m.vocab_size, 9),
                                    y = random_tokens(B * T, m.vocab_size, 10);
    auto run = [&](const char* reduction, std::vector<float>& g) {
        ModelConfig c = m;
        c.vq_reduction = reduction;
        Transformer model(c, B, T);
        g.assign(p.size(), 0.f);
        const float loss = model.forward(p.data(), x.data(), y.data(), B, T, 1.f);
        model.backward(p.data(), g.data());
        return loss;
    };
    std::vector<float> gs, gm;
    const float serial = run("serial", gs), matmul = run("matmul", gm);
    EXPECT_NEAR(matmul, serial, 1e-6 * serial);
    EXPECT_LT(max_rel(gm.data(), gs.data(), static_cast<int>(gs.size())), 1e-4);
}

TEST(VqModel, RefusesWhatItCannotDoByName) {
    auto refused = [](ModelConfig m, const char* key) {
        try {
            check_model_config(m);
            ADD_FAILURE() << "accepted " << key;
        } catch (const InvalidInput& e) {
            EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
        }
    };
    ModelConfig m = tiny_vq();
    m.position = "rope";
    refused(m, "model.position");
    m = tiny_vq(), m.block = "parallel";
    refused(m, "model.block");
    m = tiny_vq(), m.attn_act = "sqrelu";
    refused(m, "model.attn_act");
    m = tiny_vq(), m.vq_c_gamma = 1.f;
    refused(m, "model.vq.c_gamma");
    m = tiny_vq(), m.attention = "linear";
    refused(m, "model.attention");
    ModelConfig plain;
    plain.mlp = "none", plain.block = "parallel";
    refused(plain, "model.mlp");
    ModelConfig sin_full;  // scaled sinusoids are the VQ layer's option
    sin_full.position = "scaled_sin";
    refused(sin_full, "model.position");
    m = tiny_vq(), m.vq_reduction = "scan";
    refused(m, "model.vq.reduction");
}

}  // namespace
}  // namespace meshlm

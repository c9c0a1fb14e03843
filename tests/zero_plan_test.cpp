// ZeRO's partition of the flat buffer, the per-rank memory it implies, and the single-process
// side of the sharded learner: on one rank every stage trains bitwise like stage 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "meshlm/core/rng.h"
#include "meshlm/core/threads.h"
#include "meshlm/data/synthetic.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"
#include "meshlm/optim/param_groups.h"
#include "meshlm/parallel/fsdp.h"
#include "meshlm/parallel/local_comm.h"
#include "meshlm/parallel/zero_plan.h"
#include "meshlm/train/learner.h"
#include "test_util.h"

namespace meshlm {
namespace {

TEST(ZeroPlan, ChunksAreEqualAlignedAndCoverTheBuffer) {
    for (int n : {1, 2, 3, 4, 8}) {
        ZeroPlan p(1000, n, n - 1, 2);
        EXPECT_GE(p.padded, p.total);
        EXPECT_EQ(p.padded, p.chunk * n);
        if (n > 1) {
            EXPECT_EQ(p.chunk % 16, 0u);
        }
        EXPECT_LT(p.padded - p.total, 16u * n);
        EXPECT_EQ(p.end(), p.padded);
    }
    EXPECT_EQ(ZeroPlan(1000, 1, 0, 0).chunk, 1000u);
    EXPECT_THROW(ZeroPlan(1000, 2, 0, 4), InvalidInput);
}

ModelConfig small_model() {
    ModelConfig m;
    m.n_layer = 3, m.d_model = 32, m.n_head = 2, m.vocab_size = 61, m.max_seq_len = 16;
    return m;
}

TEST(ZeroPlan, MemoryFollowsTheZeroPaper) {
    const ParamLayout layout = transformer_layout(small_model());
    for (int n : {2, 4}) {
        const ZeroPlan plan(layout.total(), n, 0, 0);
        const std::size_t psi = plan.padded, shard = plan.chunk;
        auto m = [&](int stage) {
            return zero_memory(ZeroPlan(layout.total(), n, 0, stage), layout);
        };
        auto state = [&](int stage) {
            return m(stage).params + m(stage).grads + m(stage).optimizer;
        };
        EXPECT_EQ(state(0), 16 * psi);
        EXPECT_EQ(state(1), 8 * psi + 8 * shard);
        EXPECT_EQ(state(2), 4 * psi + 12 * shard);
        EXPECT_EQ(state(3), 16 * shard);
        EXPECT_EQ(m(0).working, 0u);

        // FSDP: the embeddings and ln_f (parameters + gradients) and two block slots (parameters,
        // gradients, and the largest part of any block that one rank's chunk holds), from the
        // registry's layer tags; stage 2 only the gradient buffers.
        const int L = small_model().n_layer;
        const auto [lo, hi, end] = test::block_spans(layout, L);
        std::size_t block = 0, receive = 0;
        for (int l = 0; l < L; ++l) block = std::max(block, hi[l] - lo[l]);
        for (int l = 0; l < L; ++l)
            for (int r = 0; r < n; ++r) {
                const std::size_t a = lo[l], b = hi[l];
                const std::size_t x = std::max(a, r * shard), y = std::min(b, (r + 1) * shard);
                if (x < y) receive = std::max(receive, y - x);
            }
        const std::size_t root = lo[0] + (end - hi[L - 1]);
        // Stage 2 streams only gradients: the units' gradient buffers.
        EXPECT_EQ(m(2).working, 4 * (root + 2 * (block + receive))) << n << " ranks";
        EXPECT_EQ(m(3).working, 4 * (2 * root + 2 * (2 * block + receive))) << n << " ranks";
    }
    // GPT-2 small over 8 ranks: FSDP's buffers are well under the two whole-model buffers
    // (parameters and gradients) that a gather-everything stage 3 needs.
    ModelConfig small;
    small.n_layer = 12, small.d_model = 768, small.n_head = 12, small.vocab_size = 50257;
    small.max_seq_len = 1024;
    const ParamLayout gpt2 = transformer_layout(small);
    const ZeroMemory z = zero_memory(ZeroPlan(gpt2.total(), 8, 0, 3), gpt2);
    EXPECT_LT(z.working, 4 * gpt2.total()) << "under one whole buffer";
    // One rank has nothing to shard: stages 2 and 3 keep whole buffers.
    EXPECT_EQ(zero_memory(ZeroPlan(layout.total(), 1, 0, 2), layout).working, 4 * layout.total());
    EXPECT_EQ(zero_memory(ZeroPlan(layout.total(), 1, 0, 3), layout).working, 8 * layout.total());
}

// A rank initializes only its chunk (init_params on a range), with the values of the whole init.
TEST(Fsdp, ChunkInitEqualsThatPartOfTheWholeInit) {
    const ModelConfig m = small_model();
    const ParamLayout layout = transformer_layout(m);
    std::vector<float> whole(layout.total());
    init_params(m, layout, whole.data(), 11);
    for (int n : {2, 3, 7}) {
        const ZeroPlan plan(layout.total(), n, 0, 3);
        for (int r = 0; r < n; ++r) {
            const std::size_t begin = plan.chunk * r,
                              end = std::min(begin + plan.chunk, layout.total());
            std::vector<float> chunk(end - begin, -7.f);
            init_params(m, layout, 1, 0, chunk.data(), 11, begin, end);
            for (std::size_t i = begin; i < end; ++i) {
                // Alignment gaps between slices are not the init's: the whole buffer has 0.
                if (chunk[i - begin] == -7.f && whole[i] == 0.f) continue;
                ASSERT_EQ(chunk[i - begin], whole[i]) << n << " ranks, element " << i;
            }
        }
    }
}

// FSDP's stream on one rank hands the model the same parameters and collects the same
// gradients as the flat buffers: loss and every gradient bitwise equal.
TEST(Fsdp, StreamOnOneRankEqualsFlatBuffers) {
    set_thread_count(1);
    const ModelConfig m = small_model();
    const int B = 2, T = 16;
    Transformer flat(m, B, T), streamed(m, B, T);
    const ParamLayout& layout = flat.layout();
    std::vector<float> params(layout.total()), grads(layout.total(), 0.f);
    init_params(m, layout, params.data(), 7);
    Philox rng(1, 2);
    std::vector<std::int32_t> tokens(B * T), targets(B * T);
    random_tokens(B, T, m.vocab_size, rng, tokens.data(), targets.data());
    const float loss = flat.forward(params.data(), tokens.data(), targets.data(), B, T, 0.01f);
    flat.backward(params.data(), grads.data());

    LocalComm one;
    const ZeroPlan plan(layout.total(), 1, 0, 3);
    std::vector<float> grad_chunk(plan.chunk, 0.f);
    FsdpStream stream(one, plan, layout, params.data(), grad_chunk.data());
    streamed.set_param_stream(&stream);
    stream.begin(true);
    const float loss2 = streamed.forward(nullptr, tokens.data(), targets.data(), B, T, 0.01f);
    streamed.backward(nullptr, nullptr);
    stream.end();
    EXPECT_EQ(loss, loss2);
    EXPECT_EQ(std::memcmp(grads.data(), grad_chunk.data(), grads.size() * sizeof(float)), 0);
}

TEST(ZeroPlan, ShardGroupsIntersectAndKeepDecay) {
    std::vector<ParamGroup> g = {{0, 100, true}, {100, 50, false}, {160, 40, true}};
    auto s = shard_groups(g, 64, 176);
    ASSERT_EQ(s.size(), 3u);
    EXPECT_EQ(s[0].offset, 0u);
    EXPECT_EQ(s[0].numel, 36u);
    EXPECT_TRUE(s[0].decay);
    EXPECT_EQ(s[1].offset, 36u);
    EXPECT_EQ(s[1].numel, 50u);
    EXPECT_FALSE(s[1].decay);
    EXPECT_EQ(s[2].offset, 96u);
    EXPECT_EQ(s[2].numel, 16u);
    EXPECT_TRUE(s[2].decay);
    EXPECT_TRUE(shard_groups(g, 200, 300).empty());
}

TEST(ZeroLearner, EveryStageOnOneRankTrainsLikeStageZero) {
    set_thread_count(1);
    ModelConfig m;
    m.n_layer = 2, m.d_model = 32, m.n_head = 2, m.vocab_size = 61, m.max_seq_len = 16;
    OptimConfig o;
    o.grad_clip = 0.5f;
    const int B = 2, T = 16, accum = 2;
    std::vector<float> reference;
    for (int stage = 0; stage <= 3; ++stage) {
        Learner learner(m, o, B, T, 10, nullptr, stage);
        learner.init_params(3);
        Philox rng(5, 6);
        std::vector<std::int32_t> tokens(accum * B * T), targets(accum * B * T);
        for (int s = 0; s < 4; ++s) {
            random_tokens(accum * B, T, m.vocab_size, rng, tokens.data(), targets.data());
            learner.train_step(tokens.data(), targets.data(), accum);
        }
        learner.sync_params();
        std::vector<float> p(learner.params(), learner.params() + learner.layout().total());
        if (stage == 0)
            reference = p;
        else
            EXPECT_EQ(p, reference) << "stage " << stage;
        auto full = learner.gather_optimizer();
        Optimizer& opt = full ? *full : learner.optimizer();
        EXPECT_EQ(opt.steps_taken(), 4);
    }
}

}  // namespace
}  // namespace meshlm

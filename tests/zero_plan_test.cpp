// ZeRO's partition of the flat buffer, the per-rank memory it implies, and the single-process
// side of the sharded learner: on one rank every stage trains bitwise like stage 0.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "meshlm/core/rng.h"
#include "meshlm/data/synthetic.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/parallel/zero_plan.h"
#include "meshlm/train/learner.h"

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

TEST(ZeroPlan, MemoryFollowsTheZeroPaper) {
    const std::size_t psi = 4096;  // divides evenly: Ψ = padded
    for (int n : {2, 4}) {
        const std::size_t shard = psi / n;
        auto m = [&](int stage) { return zero_memory(ZeroPlan(psi, n, 0, stage)); };
        auto state = [&](int stage) {
            return m(stage).params + m(stage).grads + m(stage).optimizer;
        };
        EXPECT_EQ(state(0), 16 * psi);
        EXPECT_EQ(state(1), 8 * psi + 8 * shard);
        EXPECT_EQ(state(2), 4 * psi + 12 * shard);
        EXPECT_EQ(state(3), 16 * shard);
        EXPECT_EQ(m(0).working, 0u);
        EXPECT_EQ(m(2).working, 4 * psi);
        EXPECT_EQ(m(3).working, 8 * psi);
    }
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
    kernels::set_threads(1);
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
        AdamW& opt = full ? *full : learner.optimizer();
        EXPECT_EQ(opt.steps_taken(), 4);
    }
}

}  // namespace
}  // namespace meshlm

// The data-parallel Learner on 2 real ranks against one process with the same global batch,
// when one rank's micro-batch has no scored target (every target -1, as padding can make it):
// that rank must still run it, since the collectives of the step -- stage 0/1's per-block
// all-reduces from the backward hook, stage 2/3's streamed gathers and reductions -- must be
// the same sequence on every rank. Losses and weights after 5 steps, every ZeRO stage.
// Assertions are EXPECT_*: a rank that returned early would skip collectives its peers enter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "meshlm/core/rng.h"
#include "meshlm/core/threads.h"
#include "meshlm/data/synthetic.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/train/learner.h"
#include "mpi_main.h"

namespace meshlm {
namespace {

constexpr int kB = 2, kT = 8, kMicro = 2, kSteps = 5;

TEST(LearnerMpi, AMicroBatchWithNothingToScoreOnOneRank) {
    Comm& world = test::mpi_world();
    if (world.size() != 2) GTEST_SKIP() << "needs 2 ranks";
    set_thread_count(1);
    ModelConfig m;
    m.n_layer = 2, m.d_model = 32, m.n_head = 2, m.vocab_size = 64, m.max_seq_len = kT;
    OptimConfig o;
    o.grad_clip = 1.f;
    const int W = world.size(), r = world.rank();
    for (int stage = 0; stage <= 3; ++stage) {
        Learner dp(m, o, kB, kT, kSteps, &world, stage);
        Learner one(m, o, kB * W, kT, kSteps);
        dp.init_params(3);
        one.init_params(3);
        for (int step = 0; step < kSteps; ++step) {
            // Global micro-batch g: rows [w * kB, (w + 1) * kB) are rank w's. On rank 1 the last
            // micro-batch (the one whose backward drives stage 0/1's hook) scores nothing.
            std::vector<std::int32_t> all_tok(kMicro * W * kB * kT), all_tgt(all_tok.size());
            Philox rng(9, static_cast<std::uint64_t>(step));
            random_tokens(kMicro * W * kB, kT, m.vocab_size, rng, all_tok.data(), all_tgt.data());
            const std::size_t rows = static_cast<std::size_t>(kB) * kT;
            std::fill_n(all_tgt.begin() + ((kMicro - 1) * W + 1) * rows, rows, -1);
            std::vector<std::int32_t> tok, tgt;
            for (int g = 0; g < kMicro; ++g) {
                const std::size_t at = (g * W + r) * rows;
                tok.insert(tok.end(), all_tok.begin() + at, all_tok.begin() + at + rows);
                tgt.insert(tgt.end(), all_tgt.begin() + at, all_tgt.begin() + at + rows);
            }
            const StepStats a = one.train_step(all_tok.data(), all_tgt.data(), kMicro);
            const StepStats b = dp.train_step(tok.data(), tgt.data(), kMicro);
            EXPECT_LE(std::abs(a.loss - b.loss), 1e-5f * std::abs(a.loss))
                << "stage " << stage << " step " << step + 1;
        }
        dp.sync_params();
        one.sync_params();
        float diff = 0;
        for (std::size_t i = 0; i < one.layout().total(); ++i)
            diff = std::max(diff, std::abs(one.params()[i] - dp.params()[i]));
        EXPECT_LE(diff, 1e-5f) << "stage " << stage << ": max |weight difference|";
    }
}

}  // namespace
}  // namespace meshlm

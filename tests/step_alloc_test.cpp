// The static memory plan: once a Learner is built, training steps and evaluation passes make
// no heap allocation through operator new. oneDNN's sgemm allocates its own packing scratch on
// each call; kernels::in_gemm() tells those apart, and they are not counted.
// This binary replaces the global operator new to count calls while a step runs.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "meshlm/core/rng.h"
#include "meshlm/core/threads.h"
#include "meshlm/data/synthetic.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/train/learner.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(std::size_t n) {
    if (g_counting && !meshlm::kernels::in_gemm()) ++g_allocations;
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}

namespace meshlm {
namespace {

class StepAllocations : public ::testing::TestWithParam<std::string> {};

TEST_P(StepAllocations, TrainStepAndEvalAllocateNothing) {
    set_thread_count(2);
    ModelConfig m;
    m.n_layer = 2, m.d_model = 32, m.n_head = 2, m.vocab_size = 61, m.max_seq_len = 24;
    if (GetParam() == "vq") {  // Transformer-VQ: its kernels keep their scratch across steps
        m.attention = "vq", m.position = "none", m.norm = "rmsnorm", m.norm_bias = false;
        m.mlp = "sqrelu", m.vq_block_len = 4, m.vq_codes = 8, m.vq_d_k = 8, m.vq_d_v = 32;
    }
    if (GetParam() == "attn_act") {  // the non-softmax attention kernel keeps its scratch
        m.attn_act = "norm_sqrelu", m.position = "alibi";
    }
    OptimConfig o;
    if (GetParam() == "adafactor")  // its matrices factored: per-tensor sums, packed moments
        o.name = "adafactor", o.adafactor_min_dim_size_to_factor = 32;
    const int B = 3, T = 24, accum = 2;
    Learner learner(m, o, B, T, 10);
    learner.init_params(1);
    std::vector<std::int32_t> tokens(accum * B * T), targets(accum * B * T);
    Philox rng(1, 2);
    random_tokens(accum * B, T, m.vocab_size, rng, tokens.data(), targets.data());
    learner.train_step(tokens.data(), targets.data(), accum);  // warm: OpenMP pool, GEMM JIT

    g_allocations = 0;
    g_counting = true;
    for (int s = 0; s < 3; ++s) {
        random_tokens(accum * B, T, m.vocab_size, rng, tokens.data(), targets.data());
        learner.train_step(tokens.data(), targets.data(), accum);
        learner.eval_loss(tokens.data(), targets.data());
    }
    g_counting = false;
    EXPECT_EQ(g_allocations.load(), 0) << "operator new was called inside the step loop";

    // The counter works: an allocation while counting is seen.
    g_counting = true;
    auto* probe = new std::vector<int>(10);
    g_counting = false;
    delete probe;
    EXPECT_GE(g_allocations.load(), 1);
}

INSTANTIATE_TEST_SUITE_P(Models, StepAllocations,
                         ::testing::Values("gpt2", "vq", "adafactor", "attn_act"));

}  // namespace
}  // namespace meshlm

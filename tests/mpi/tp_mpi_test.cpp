// Tensor parallelism on real ranks (run under mpirun -np 2 and -np 4): TensorParallelGPT2 on
// every (data x model) mesh that fits the world -- TP 2, TP 4, TP 2 x DP 2 -- against the
// single-process Transformer on the same parameters, which every rank also runs: logits, loss, every
// gradient (gathered to the full layout), bit-identical replicated gradients across model
// ranks, and 20 AdamW steps with global-norm clipping (losses and final weights).
// Assertions are EXPECT_*: a rank that returned early would skip collectives its peers enter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "meshlm/core/rng.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"
#include "meshlm/model/key_bias.h"
#include "meshlm/optim/adamw.h"
#include "meshlm/parallel/mesh.h"
#include "meshlm/parallel/tp_gpt2.h"
#include "meshlm/parallel/tp_shard.h"
#include "mpi_main.h"

namespace meshlm {
namespace {

constexpr int kB = 4, kT = 16;

ModelConfig small_config() {
    ModelConfig cfg;
    cfg.n_layer = 2;
    cfg.d_model = 64;
    cfg.n_head = 4;
    cfg.vocab_size = 96;  // divisible by 2 and 4 (an uneven vocabulary is padded, not split)
    cfg.max_seq_len = 16;
    cfg.init_std = 0.05f;
    return cfg;
}

struct Batch {
    std::vector<std::int32_t> tokens, targets;
    int valid = 0;
};

// A batch of step `step`, the same on every rank; a few ignored targets.
Batch make_batch(int step, int V) {
    Batch b;
    Philox rng(99, static_cast<std::uint64_t>(step));
    for (int n = 0; n < kB * kT; ++n) {
        b.tokens.push_back(static_cast<std::int32_t>(rng.below(V)));
        const bool ignore = rng.below(7) == 0;
        b.targets.push_back(ignore ? -1 : static_cast<std::int32_t>(rng.below(V)));
        b.valid += !ignore;
    }
    return b;
}

std::vector<ParamGroup> groups_of(const ParamLayout& layout) {
    std::vector<ParamGroup> g;
    for (const ParamSlice& s : layout.slices()) g.push_back({s.offset, s.numel, s.is_matrix()});
    return g;
}

// max |a - b| over the slice, and max |b|.
std::pair<float, float> slice_diff(const ParamSlice& s, const float* a, const float* b) {
    float diff = 0, ref = 0;
    for (std::size_t j = 0; j < s.numel; ++j) {
        diff = std::max(diff, std::fabs(a[s.offset + j] - b[s.offset + j]));
        ref = std::max(ref, std::fabs(b[s.offset + j]));
    }
    return {diff, ref};
}

float max_abs(const std::vector<float>& x) {
    float m = 0;
    for (float v : x) m = std::max(m, std::fabs(v));
    return m;
}

// One (data, model) mesh: D data-parallel replicas, each M-way tensor parallel.
class TpRun {
  public:
    TpRun(Comm& world, int D, int M)
        : cfg(small_config()),
          mesh(world, D, M),
          full_layout(transformer_layout(cfg)),
          ref(cfg, kB, kT),
          tp(cfg, mesh.model_comm(), kB / D, kT),
          full(full_layout.total()),
          local(tp.layout().total()) {
        gpt2_init(cfg, full_layout, full.data(), 1234);
        tp_init_shard(cfg, M, mesh.model_index(), local.data(), 1234);
    }
    // This data rank's rows of a global batch.
    std::size_t row0() const { return static_cast<std::size_t>(mesh.data_index()) * rows(); }
    int rows() const { return kB / mesh.data_size(); }

    // Forward + backward on both models; grads zeroed first and data-parallel reduced (sum,
    // with grad_scale 1/valid over the global batch). Returns {reference loss, TP loss}.
    std::pair<float, float> step_grads(const Batch& b, std::vector<float>& g_full,
                                       std::vector<float>& g_local) {
        std::fill(g_full.begin(), g_full.end(), 0.f);
        std::fill(g_local.begin(), g_local.end(), 0.f);
        const float scale = 1.f / b.valid;
        const float l_ref =
            ref.forward(full.data(), b.tokens.data(), b.targets.data(), kB, kT, scale);
        ref.backward(full.data(), g_full.data());
        const std::size_t off = row0() * kT;
        const float l_local = tp.forward(local.data(), b.tokens.data() + off,
                                         b.targets.data() + off, rows(), kT, scale);
        tp.backward(local.data(), g_local.data());
        double sums[1] = {0};  // the global mean from local means: weight by valid rows
        int valid_local = 0;
        for (int n = 0; n < rows() * kT; ++n) valid_local += b.targets[off + n] >= 0;
        sums[0] = static_cast<double>(l_local) * valid_local;
        mesh.data_comm().all_reduce_sum(sums, 1);
        mesh.data_comm().all_reduce_sum(g_local.data(), g_local.size());
        return {l_ref, static_cast<float>(sums[0] / b.valid)};
    }

    ModelConfig cfg;
    DeviceMesh mesh;
    ParamLayout full_layout;
    Transformer ref;
    TensorParallelGPT2 tp;
    std::vector<float> full, local;
};

class TpMpi : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(TpMpi, LogitsLossAndGradientsMatchSingleProcess) {
    const auto [D, M] = GetParam();
    if (D * M != test::mpi_world().size()) GTEST_SKIP() << "needs " << D * M << " ranks";
    TpRun run(test::mpi_world(), D, M);
    const Batch b = make_batch(0, run.cfg.vocab_size);
    const int V = run.cfg.vocab_size, Vl = V / M, N = run.rows() * kT;

    // Logits: this rank's columns of its rows, without ever forming (N, V) on a TP rank.
    run.ref.forward(run.full.data(), b.tokens.data(), nullptr, kB, kT);
    const std::size_t off = run.row0() * kT;
    run.tp.forward(run.local.data(), b.tokens.data() + off, nullptr, run.rows(), kT);
    float max_diff = 0, max_ref = 0;
    for (int n = 0; n < N; ++n)
        for (int v = 0; v < Vl; ++v) {
            const float r = run.ref.logits()[(off + n) * V + run.tp.vocab_begin() + v];
            max_diff = std::max(max_diff, std::fabs(run.tp.logits()[n * Vl + v] - r));
            max_ref = std::max(max_ref, std::fabs(r));
        }
    EXPECT_LE(max_diff, 1e-5f * max_ref);

    std::vector<float> g_full(run.full.size()), g_local(run.local.size()),
        g_gathered(run.full.size());
    run.mesh.model_comm().reset_bytes_sent();
    const auto [l_ref, l_tp] = run.step_grads(b, g_full, g_local);
    EXPECT_LE(std::fabs(l_tp - l_ref), 1e-5f * l_ref) << l_tp << " vs " << l_ref;
    EXPECT_EQ(run.mesh.model_comm().bytes_sent(),
              tp_step_bytes(run.cfg, M, run.mesh.model_index(), run.rows(), kT));

    tp_gather(run.cfg, run.mesh.model_comm(), g_local.data(), g_gathered.data());
    float worst = 0;
    for (const ParamSlice& s : run.full_layout.slices()) {
        const auto [diff, ref] = slice_diff(s, g_gathered.data(), g_full.data());
        EXPECT_LE(diff, 1e-5f * ref) << s.name << " diff " << diff << " max " << ref;
        worst = std::max(worst, diff / ref);
    }
    // Replicated gradients: identical bits on every model rank (max == min over the group).
    for (const ParamSlice& s : run.tp.layout().slices()) {
        if (tp_split_of(s.name) != TpSplit::replicated) continue;
        std::vector<float> hi(g_local.begin() + s.offset, g_local.begin() + s.offset + s.numel);
        std::vector<float> lo = hi;
        run.mesh.model_comm().all_reduce_max(hi.data(), hi.size());
        run.mesh.model_comm().all_reduce_min(lo.data(), lo.size());
        EXPECT_EQ(hi, lo) << s.name;
    }
    if (test::mpi_world().rank() == 0)
        std::printf("data %d x model %d: loss %.7f vs %.7f, worst gradient diff / max %.2e\n", D, M,
                    l_tp, l_ref, worst);
}

TEST_P(TpMpi, TwentyAdamWStepsMatchSingleProcess) {
    const auto [D, M] = GetParam();
    if (D * M != test::mpi_world().size()) GTEST_SKIP() << "needs " << D * M << " ranks";
    TpRun run(test::mpi_world(), D, M);
    OptimConfig oc;
    oc.weight_decay = 0.1f;
    const float lr = 1e-3f, max_norm = 0.5f;
    AdamW opt_ref(oc, groups_of(run.full_layout), run.full.size());
    AdamW opt_tp(oc, groups_of(run.tp.layout()), run.local.size());
    std::vector<float> g_full(run.full.size()), g_local(run.local.size());
    float worst_loss = 0;
    int clipped = 0;
    for (int step = 0; step < 20; ++step) {
        const Batch b = make_batch(step, run.cfg.vocab_size);
        const auto [l_ref, l_tp] = run.step_grads(b, g_full, g_local);
        EXPECT_LE(std::fabs(l_tp - l_ref), 1e-5f * l_ref) << "step " << step;
        worst_loss = std::max(worst_loss, std::fabs(l_tp - l_ref) / l_ref);
        // Both runs' key-bias gradients are rounding noise (model/key_bias.h): AdamW would
        // random-walk them apart by ~3e-5 in 20 steps. Zeroed, the weights compare exactly.
        const float scale = max_abs(g_full);
        EXPECT_LE(zero_key_bias_grads(run.full_layout, g_full.data()), 1e-7f * scale);
        EXPECT_LE(zero_key_bias_grads(run.tp.layout(), g_local.data()), 1e-7f * scale);
        // Global-norm clipping: sharded slices summed over model ranks, replicated counted once.
        const float norm_ref = clip_grad_norm(g_full.data(), g_full.size(), max_norm);
        const float norm_tp = static_cast<float>(
            std::sqrt(tp_sum_squares(run.tp.layout(), g_local.data(), run.mesh.model_comm())));
        EXPECT_LE(std::fabs(norm_tp - norm_ref), 1e-5f * norm_ref) << "step " << step;
        if (norm_tp > max_norm) {
            kernels::scale(g_local.data(), max_norm / (norm_tp + 1e-6f), g_local.size());
            ++clipped;
        }
        opt_ref.step(run.full.data(), g_full.data(), lr);
        opt_tp.step(run.local.data(), g_local.data(), lr);
    }
    std::vector<float> gathered(run.full.size());
    tp_gather(run.cfg, run.mesh.model_comm(), run.local.data(), gathered.data());
    float worst = 0;
    std::string worst_name;
    for (const ParamSlice& s : run.full_layout.slices()) {
        const float diff = slice_diff(s, gathered.data(), run.full.data()).first;
        EXPECT_LE(diff, 1e-5f) << s.name;
        if (diff > worst) worst = diff, worst_name = s.name;
    }
    if (test::mpi_world().rank() == 0)
        std::printf(
            "data %d x model %d: 20 steps (%d clipped), worst loss rel diff %.2e, "
            "worst weight abs diff %.2e (%s)\n",
            D, M, clipped, worst_loss, worst, worst_name.c_str());
}

INSTANTIATE_TEST_SUITE_P(Meshes, TpMpi,
                         ::testing::Values(std::pair{1, 2}, std::pair{1, 4}, std::pair{2, 2}),
                         [](const auto& info) {
                             return "data" + std::to_string(info.param.first) + "_model" +
                                    std::to_string(info.param.second);
                         });

}  // namespace
}  // namespace meshlm

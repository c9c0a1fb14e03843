// Tensor-parallel shard layout (parallel/tp_layout.h) on one process: scatter/place round
// trips, which rows and columns each rank holds, the divisibility error, and the TP model at
// M = 1 (LocalComm) matching the single-process GPT2. Multi-rank checks: tests/mpi/tp_mpi_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"
#include "meshlm/model/key_bias.h"
#include "meshlm/parallel/local_comm.h"
#include "meshlm/parallel/tp_gpt2.h"
#include "meshlm/parallel/tp_shard.h"

namespace meshlm {
namespace {

ModelConfig small_config() {
    ModelConfig cfg;
    cfg.n_layer = 2;
    cfg.d_model = 32;
    cfg.n_head = 4;
    cfg.vocab_size = 40;
    cfg.max_seq_len = 8;
    return cfg;
}

// Every element of the full buffer gets its own index as value.
std::vector<float> iota_params(const ParamLayout& layout) {
    std::vector<float> p(layout.total());
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<float>(i);
    return p;
}

TEST(TpLayout, SplitsByName) {
    EXPECT_EQ(tp_split_of("wte.weight"), TpSplit::rows);
    EXPECT_EQ(tp_split_of("wpe.weight"), TpSplit::replicated);
    EXPECT_EQ(tp_split_of("h.1.attn.c_attn.weight"), TpSplit::qkv_rows);
    EXPECT_EQ(tp_split_of("h.1.attn.c_attn.bias"), TpSplit::qkv_rows);
    EXPECT_EQ(tp_split_of("h.1.attn.c_proj.weight"), TpSplit::columns);
    EXPECT_EQ(tp_split_of("h.1.attn.c_proj.bias"), TpSplit::replicated);
    EXPECT_EQ(tp_split_of("h.0.mlp.c_fc.weight"), TpSplit::rows);
    EXPECT_EQ(tp_split_of("h.0.mlp.c_fc.bias"), TpSplit::rows);
    EXPECT_EQ(tp_split_of("h.0.mlp.c_proj.weight"), TpSplit::columns);
    EXPECT_EQ(tp_split_of("h.0.mlp.c_proj.bias"), TpSplit::replicated);
    EXPECT_EQ(tp_split_of("h.0.ln_1.weight"), TpSplit::replicated);
    EXPECT_EQ(tp_split_of("ln_f.bias"), TpSplit::replicated);
}

TEST(TpLayout, LocalShapes) {
    const ModelConfig cfg = small_config();
    const ParamLayout l = transformer_layout(cfg, 2);
    EXPECT_EQ(l.at("wte.weight").shape, (Shape{20, 32}));
    EXPECT_EQ(l.at("wpe.weight").shape, (Shape{8, 32}));
    EXPECT_EQ(l.at("h.0.attn.c_attn.weight").shape, (Shape{48, 32}));
    EXPECT_EQ(l.at("h.0.attn.c_attn.bias").shape, (Shape{48}));
    EXPECT_EQ(l.at("h.0.attn.c_proj.weight").shape, (Shape{32, 16}));
    EXPECT_EQ(l.at("h.0.attn.c_proj.bias").shape, (Shape{32}));
    EXPECT_EQ(l.at("h.0.mlp.c_fc.weight").shape, (Shape{64, 32}));
    EXPECT_EQ(l.at("h.0.mlp.c_proj.weight").shape, (Shape{32, 64}));
    EXPECT_EQ(l.slices().size(), transformer_layout(cfg).slices().size());
}

TEST(TpLayout, ScatterThenPlaceRebuildsFull) {
    const ModelConfig cfg = small_config();
    const ParamLayout full_layout = transformer_layout(cfg);
    const std::vector<float> full = iota_params(full_layout);
    for (int M : {1, 2, 4}) {
        const ParamLayout local_layout = transformer_layout(cfg, M);
        std::vector<float> rebuilt(full.size(), -1.f);
        for (int r = 0; r < M; ++r) {
            std::vector<float> local(local_layout.total());
            tp_scatter(cfg, M, r, full.data(), local.data());
            tp_place(cfg, M, r, local.data(), rebuilt.data());
        }
        for (const ParamSlice& s : full_layout.slices())
            for (std::size_t j = 0; j < s.numel; ++j)
                ASSERT_EQ(rebuilt[s.offset + j], full[s.offset + j]) << s.name << " M=" << M;
    }
}

TEST(TpLayout, RankHoldsItsHeadsColumnsAndVocabulary) {
    const ModelConfig cfg = small_config();  // C 32, H 4, D 8, F 128, V 40
    const ParamLayout fl = transformer_layout(cfg), ll = transformer_layout(cfg, 2);
    const std::vector<float> full = iota_params(fl);
    std::vector<float> local(ll.total());
    const int r = 1, C = 32, Cl = 16;
    tp_scatter(cfg, 2, r, full.data(), local.data());
    auto full_at = [&](const char* name, std::size_t i) { return full[fl.at(name).offset + i]; };
    auto local_at = [&](const char* name, std::size_t i) { return local[ll.at(name).offset + i]; };
    // c_attn: local row p*Cl + i is full row p*C + r*Cl + i for q (p=0), k (1), v (2).
    for (int p = 0; p < 3; ++p)
        for (int i = 0; i < Cl; ++i) {
            EXPECT_EQ(local_at("h.1.attn.c_attn.weight", (p * Cl + i) * C + 5),
                      full_at("h.1.attn.c_attn.weight", (p * C + r * Cl + i) * C + 5));
            EXPECT_EQ(local_at("h.1.attn.c_attn.bias", p * Cl + i),
                      full_at("h.1.attn.c_attn.bias", p * C + r * Cl + i));
        }
    // attn.c_proj (C, C): columns r*Cl..; mlp.c_proj (C, F): columns r*64..
    EXPECT_EQ(local_at("h.0.attn.c_proj.weight", 3 * Cl + 2),
              full_at("h.0.attn.c_proj.weight", 3 * C + r * Cl + 2));
    EXPECT_EQ(local_at("h.0.mlp.c_proj.weight", 3 * 64 + 2),
              full_at("h.0.mlp.c_proj.weight", 3 * 128 + r * 64 + 2));
    // mlp.c_fc rows r*64.., wte rows r*20..
    EXPECT_EQ(local_at("h.0.mlp.c_fc.weight", 0), full_at("h.0.mlp.c_fc.weight", r * 64 * C));
    EXPECT_EQ(local_at("h.0.mlp.c_fc.bias", 7), full_at("h.0.mlp.c_fc.bias", r * 64 + 7));
    EXPECT_EQ(local_at("wte.weight", 3 * C + 1), full_at("wte.weight", (r * 20 + 3) * C + 1));
    EXPECT_EQ(local_at("h.0.attn.c_proj.bias", 9), full_at("h.0.attn.c_proj.bias", 9));
}

TEST(TpLayout, ShapesThatDoNotDivideAreRejected) {
    ModelConfig cfg = small_config();
    cfg.vocab_size = 41;
    try {
        transformer_layout(cfg, 2);
        FAIL() << "expected InvalidInput";
    } catch (const InvalidInput& e) {
        EXPECT_NE(std::string(e.what()).find("model.vocab_size (41)"), std::string::npos)
            << e.what();
    }
    cfg = small_config();
    EXPECT_THROW(transformer_layout(cfg, 3), InvalidInput);  // 4 heads
    LocalComm comm;
    cfg.n_head = 3;
    cfg.d_model = 24;
    EXPECT_NO_THROW(TensorParallelGPT2(cfg, comm, 1, 4));  // M = 1 splits nothing
}

TEST(TpLayout, GatherOnOneRankIsTheIdentity) {
    const ModelConfig cfg = small_config();
    const ParamLayout fl = transformer_layout(cfg);
    const std::vector<float> full = iota_params(fl);
    LocalComm comm;
    std::vector<float> out(full.size(), -1.f);
    tp_gather(cfg, comm, full.data(), out.data());
    for (const ParamSlice& s : fl.slices())
        for (std::size_t j = 0; j < s.numel; ++j) ASSERT_EQ(out[s.offset + j], full[s.offset + j]);
}

TEST(TpLayout, KeyBiasGradientsZeroedInFullAndShardLayouts) {
    const ModelConfig cfg = small_config();
    for (const ParamLayout& layout : {transformer_layout(cfg), transformer_layout(cfg, 2)}) {
        std::vector<float> g = iota_params(layout);
        const std::vector<float> before = g;
        EXPECT_GT(zero_key_bias_grads(layout, g.data()), 0.f);
        for (const ParamSlice& s : layout.slices())
            for (std::size_t j = 0; j < s.numel; ++j) {
                const bool key =
                    s.name.ends_with("attn.c_attn.bias") && j >= s.numel / 3 && j < 2 * s.numel / 3;
                ASSERT_EQ(g[s.offset + j], key ? 0.f : before[s.offset + j]) << s.name << j;
            }
    }
}

// At M = 1 the tensor-parallel model is the single-process model through the vocab-parallel
// kernels and the split bias adds: same loss and gradients up to rounding.
TEST(TpGpt2, OneRankMatchesGpt2) {
    ModelConfig cfg = small_config();
    cfg.init_std = 0.1f;
    const int B = 2, T = 8, N = B * T;
    Transformer ref(cfg, B, T);
    LocalComm comm;
    TensorParallelGPT2 tp(cfg, comm, B, T);
    ASSERT_EQ(tp.layout().total(), ref.layout().total());
    std::vector<float> params(ref.layout().total()), g_ref(params.size()), g_tp(params.size());
    gpt2_init(cfg, ref.layout(), params.data(), 7);
    std::vector<std::int32_t> tokens(N), targets(N);
    for (int n = 0; n < N; ++n) {
        tokens[n] = (n * 7 + 3) % cfg.vocab_size;
        targets[n] = n % 5 == 4 ? -1 : (n * 11 + 1) % cfg.vocab_size;
    }
    const float l_ref = ref.forward(params.data(), tokens.data(), targets.data(), B, T, 0.1f);
    const float l_tp = tp.forward(params.data(), tokens.data(), targets.data(), B, T, 0.1f);
    EXPECT_NEAR(l_tp, l_ref, 1e-5f * l_ref);
    ref.backward(params.data(), g_ref.data());
    tp.backward(params.data(), g_tp.data());
    for (const ParamSlice& s : ref.layout().slices()) {
        float max_ref = 0, max_diff = 0;
        for (std::size_t j = 0; j < s.numel; ++j) {
            max_ref = std::max(max_ref, std::fabs(g_ref[s.offset + j]));
            max_diff = std::max(max_diff, std::fabs(g_ref[s.offset + j] - g_tp[s.offset + j]));
        }
        EXPECT_LE(max_diff, 1e-5f * max_ref) << s.name;
    }
}

// Init of a shard, and of a ZeRO chunk of it (FSDP), draws the single-process init's values
// piece by piece: equal to scattering the whole init.
TEST(TpLayout, ShardAndChunkInitEqualTheScatteredWholeInit) {
    ModelConfig cfg;
    cfg.n_layer = 2, cfg.d_model = 32, cfg.n_head = 4, cfg.vocab_size = 64, cfg.max_seq_len = 8;
    const ParamLayout full = transformer_layout(cfg);
    std::vector<float> whole(full.total());
    gpt2_init(cfg, full, whole.data(), 21);
    for (int M : {2, 4}) {
        const std::size_t n = transformer_layout(cfg, M).total();
        for (int r = 0; r < M; ++r) {
            std::vector<float> want(n, 0.f), shard(n, 0.f);
            tp_scatter(cfg, M, r, whole.data(), want.data());
            tp_init_shard(cfg, M, r, shard.data(), 21);
            EXPECT_EQ(shard, want) << "M " << M << " rank " << r;
            for (std::size_t parts : {2, 3}) {  // chunks of uneven edges
                const std::size_t chunk = (n + parts - 1) / parts;
                for (std::size_t begin = 0; begin < n; begin += chunk) {
                    const std::size_t end = std::min(n, begin + chunk);
                    std::vector<float> got(end - begin, 0.f);
                    tp_init_range(cfg, M, r, got.data(), 21, begin, end);
                    EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin() + begin))
                        << "M " << M << " rank " << r << " chunk at " << begin;
                }
            }
        }
    }
}

}  // namespace
}  // namespace meshlm

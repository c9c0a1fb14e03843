// Tensor-parallel shards from the registry's split facts (parallel/tp_shard.h) on one process:
// the facts the transformer's layout records, scatter/place round trips, which rows and columns
// each rank holds (q | k | v heads with grouped key/value heads, gate | up, a padded vocabulary),
// the divisibility errors, and shard / chunk init. Multi-rank checks: tests/mpi/tp_mpi_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/model/transformer_layout.h"
#include "meshlm/parallel/local_comm.h"
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

// Llama-like: GQA (4 heads, 2 key/value heads), SwiGLU of width 48, untied head, a vocabulary
// that does not divide by 2 or 4.
ModelConfig gqa_config() {
    ModelConfig cfg = small_config();
    cfg.n_kv_head = 2;
    cfg.mlp = "swiglu";
    cfg.d_ff = 48;
    cfg.norm = "rmsnorm";
    cfg.norm_bias = false;
    cfg.position = "rope";
    cfg.tied_head = false;
    cfg.head_bias = true;
    cfg.vocab_size = 41;
    return cfg;
}

// Every element of the full buffer gets its own index + 1 as value (0 marks padding).
std::vector<float> iota_params(const ParamLayout& layout) {
    std::vector<float> p(layout.total());
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<float>(i + 1);
    return p;
}

TEST(TpShard, LayoutRecordsSplitsUnitsAndDecay) {
    const ParamLayout l = transformer_layout(gqa_config());
    EXPECT_EQ(l.at("wte.weight").split, TpSplit::rows);
    EXPECT_EQ(l.at("h.1.attn.c_attn.weight").split, TpSplit::rows);
    EXPECT_EQ(l.at("h.1.attn.c_attn.weight").sections, (std::vector<std::int64_t>{32, 16, 16}));
    EXPECT_EQ(l.at("h.1.attn.c_proj.weight").split, TpSplit::columns);
    EXPECT_EQ(l.at("h.0.mlp.c_fc.weight").sections, (std::vector<std::int64_t>{48, 48}));
    EXPECT_EQ(l.at("h.0.mlp.c_proj.weight").split, TpSplit::columns);
    EXPECT_EQ(l.at("h.0.ln_1.weight").split, TpSplit::replicated);
    EXPECT_EQ(l.at("lm_head.weight").split, TpSplit::rows);
    EXPECT_EQ(l.at("lm_head.bias").split, TpSplit::rows);
    EXPECT_EQ(l.find("wpe.weight"), nullptr);  // rotary positions
    EXPECT_EQ(l.find("h.0.ln_1.bias"), nullptr);
    EXPECT_EQ(l.find("h.0.ln_2.weight")->unit, 1);
    EXPECT_EQ(l.at("wte.weight").unit, 0);
    EXPECT_EQ(l.at("lm_head.weight").unit, 3);
    EXPECT_EQ(l.unit_count(), 4);
    EXPECT_TRUE(l.at("lm_head.weight").decay);
    EXPECT_FALSE(l.at("lm_head.bias").decay);
    EXPECT_EQ(l.at("h.0.ln_1.weight").init, InitRule::ones);
}

TEST(TpShard, LocalShapes) {
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
    const ParamLayout g = transformer_layout(gqa_config(), 2);
    EXPECT_EQ(g.at("h.0.attn.c_attn.weight").shape, (Shape{32, 32}));  // 2 q + 1 k + 1 v heads
    EXPECT_EQ(g.at("h.0.mlp.c_fc.weight").shape, (Shape{48, 32}));     // 24 gate + 24 up
    EXPECT_EQ(g.at("wte.weight").shape, (Shape{21, 32}));              // 41 rows padded to 42
    EXPECT_EQ(g.at("lm_head.bias").shape, (Shape{21}));
}

TEST(TpShard, ScatterThenPlaceRebuildsFull) {
    for (const ModelConfig& cfg : {small_config(), gqa_config()}) {
        const ParamLayout full_layout = transformer_layout(cfg);
        const std::vector<float> full = iota_params(full_layout);
        for (int M : {1, 2}) {
            const ParamLayout local_layout = transformer_layout(cfg, M);
            std::vector<float> rebuilt(full.size(), -1.f);
            for (int r = 0; r < M; ++r) {
                std::vector<float> local(local_layout.total(), 0.f);
                tp_scatter(full_layout, local_layout, M, r, full.data(), local.data());
                tp_place(full_layout, local_layout, M, r, local.data(), rebuilt.data());
            }
            for (const ParamSlice& s : full_layout.slices())
                for (std::size_t j = 0; j < s.numel; ++j)
                    ASSERT_EQ(rebuilt[s.offset + j], full[s.offset + j]) << s.name << " M=" << M;
        }
    }
}

TEST(TpShard, RankHoldsItsHeadsColumnsAndVocabulary) {
    const ModelConfig cfg = small_config();  // C 32, H 4, D 8, F 128, V 40
    const ParamLayout fl = transformer_layout(cfg), ll = transformer_layout(cfg, 2);
    const std::vector<float> full = iota_params(fl);
    std::vector<float> local(ll.total());
    const int r = 1, C = 32, Cl = 16;
    tp_scatter(fl, ll, 2, r, full.data(), local.data());
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

TEST(TpShard, GroupedHeadsGatedMlpAndPaddedVocabulary) {
    const ModelConfig cfg = gqa_config();  // C 32, H 4, K 2, D 8, F 48, V 41
    const ParamLayout fl = transformer_layout(cfg), ll = transformer_layout(cfg, 2);
    const std::vector<float> full = iota_params(fl);
    const int C = 32, r = 1;
    std::vector<float> local(ll.total(), 0.f);
    tp_scatter(fl, ll, 2, r, full.data(), local.data());
    auto full_at = [&](const char* name, std::size_t i) { return full[fl.at(name).offset + i]; };
    auto local_at = [&](const char* name, std::size_t i) { return local[ll.at(name).offset + i]; };
    // Local rows: q heads 2-3 (16 rows), k head 1 (8), v head 1 (8); full rows: q 0..31,
    // k 32..47, v 48..63.
    for (int i = 0; i < 16; ++i)
        EXPECT_EQ(local_at("h.0.attn.c_attn.weight", i * C),
                  full_at("h.0.attn.c_attn.weight", (16 + i) * C));
    for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(local_at("h.0.attn.c_attn.weight", (16 + i) * C),
                  full_at("h.0.attn.c_attn.weight", (40 + i) * C));
        EXPECT_EQ(local_at("h.0.attn.c_attn.weight", (24 + i) * C),
                  full_at("h.0.attn.c_attn.weight", (56 + i) * C));
    }
    // gate rows 24..47 then up rows 48 + 24..
    EXPECT_EQ(local_at("h.1.mlp.c_fc.weight", 0), full_at("h.1.mlp.c_fc.weight", 24 * C));
    EXPECT_EQ(local_at("h.1.mlp.c_fc.weight", 24 * C), full_at("h.1.mlp.c_fc.weight", 72 * C));
    // Vocabulary rows 21..40 on rank 1, then one zero padding row.
    EXPECT_EQ(local_at("lm_head.weight", 0), full_at("lm_head.weight", 21 * C));
    EXPECT_EQ(local_at("lm_head.weight", 19 * C + 5), full_at("lm_head.weight", 40 * C + 5));
    for (int c = 0; c < C; ++c) EXPECT_EQ(local_at("lm_head.weight", 20 * C + c), 0.f);
    EXPECT_EQ(local_at("lm_head.bias", 20), 0.f);
}

TEST(TpShard, HeadsThatDoNotDivideAreRejected) {
    ModelConfig cfg = small_config();
    EXPECT_THROW(transformer_layout(cfg, 3), InvalidInput);  // 4 heads
    cfg = gqa_config();
    cfg.n_kv_head = 1;
    try {
        transformer_layout(cfg, 2);
        FAIL() << "expected InvalidInput";
    } catch (const InvalidInput& e) {
        // The one tensor-parallel rule (core/tp_divisibility.h), as the config check says it.
        EXPECT_NE(std::string(e.what()).find("key/value heads (model.n_kv_head, 0 = n_head) (1) "
                                             "must be divisible by parallel.model (2)"),
                  std::string::npos)
            << e.what();
    }
    cfg = small_config();
    cfg.vocab_size = 41;  // a vocabulary is padded, never refused
    EXPECT_NO_THROW(transformer_layout(cfg, 2));
    cfg.n_head = 3;
    cfg.d_model = 24;
    EXPECT_NO_THROW(transformer_layout(cfg, 1));  // M = 1 splits nothing
}

TEST(TpShard, GatherOnOneRankIsTheIdentity) {
    const ModelConfig cfg = small_config();
    const ParamLayout fl = transformer_layout(cfg);
    const std::vector<float> full = iota_params(fl);
    LocalComm comm;
    std::vector<float> out(full.size(), -1.f);
    tp_gather(fl, fl, comm, full.data(), out.data());
    for (const ParamSlice& s : fl.slices())
        for (std::size_t j = 0; j < s.numel; ++j) ASSERT_EQ(out[s.offset + j], full[s.offset + j]);
}

TEST(TpShard, KeyBiasGradientsZeroedInFullAndShardLayouts) {
    ModelConfig cfg = small_config();
    cfg.n_kv_head = 2;
    for (const ParamLayout& layout : {transformer_layout(cfg), transformer_layout(cfg, 2)}) {
        std::vector<float> g = iota_params(layout);
        const std::vector<float> before = g;
        EXPECT_GT(zero_null_grads(layout, g.data(), 0, layout.total()), 0.f);
        for (const ParamSlice& s : layout.slices())
            for (std::size_t j = 0; j < s.numel; ++j) {
                // (4 + 2 + 2) heads of rows: q is 4/8 of them, k the next 2/8.
                const bool key = s.name.ends_with("attn.c_attn.bias") && j >= s.numel * 4 / 8 &&
                                 j < s.numel * 6 / 8;
                ASSERT_EQ(g[s.offset + j], key ? 0.f : before[s.offset + j]) << s.name << j;
            }
    }
    // Rotary positions rotate the key bias per position: its gradient is real.
    cfg.position = "rope";
    const ParamLayout rope = transformer_layout(cfg);
    std::vector<float> g = iota_params(rope);
    EXPECT_EQ(zero_null_grads(rope, g.data(), 0, rope.total()), 0.f);
}

// Init of a shard, and of a ZeRO chunk of it (FSDP), draws the single-process init's values
// piece by piece: equal to scattering the whole init.
TEST(TpShard, ShardAndChunkInitEqualTheScatteredWholeInit) {
    for (ModelConfig cfg : {small_config(), gqa_config()}) {
        cfg.vocab_size = 64 + (cfg.tied_head ? 0 : 1);
        const ParamLayout full = transformer_layout(cfg);
        std::vector<float> whole(full.total());
        init_params(cfg, full, whole.data(), 21);
        for (int M : {2, 4}) {
            if (cfg.n_kv_head == 2 && M == 4) continue;
            const ParamLayout local = transformer_layout(cfg, M);
            const std::size_t n = local.total();
            for (int r = 0; r < M; ++r) {
                std::vector<float> want(n, 0.f), shard(n, 0.f);
                tp_scatter(full, local, M, r, whole.data(), want.data());
                init_params(cfg, local, M, r, shard.data(), 21, 0, n);
                EXPECT_EQ(shard, want) << "M " << M << " rank " << r;
                for (std::size_t parts : {2, 3}) {  // chunks of uneven edges
                    const std::size_t chunk = (n + parts - 1) / parts;
                    for (std::size_t begin = 0; begin < n; begin += chunk) {
                        const std::size_t end = std::min(n, begin + chunk);
                        std::vector<float> got(end - begin, 0.f);
                        init_params(cfg, local, M, r, got.data(), 21, begin, end);
                        EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin() + begin))
                            << "M " << M << " rank " << r << " chunk at " << begin;
                    }
                }
            }
        }
    }
}

}  // namespace
}  // namespace meshlm

// Sharded checkpoints without MPI, through the functions `meshlm reshard` uses: a random
// training state written for (data 2, model 2) holds each rank's chunk of its tensor-parallel
// shard and reassembles bitwise; a reshard chain through other layouts is bitwise stable;
// damaged, missing and foreign files are refused naming the file; the learner's local chunk.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/io/checkpoint.h"
#include "meshlm/io/checkpoint_layout.h"
#include "meshlm/io/init_from.h"
#include "meshlm/io/safetensors.h"
#include "meshlm/io/shard_format.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"
#include "meshlm/train/full_state.h"
#include "meshlm/train/learner.h"
#include "meshlm/train/sharded_checkpoint.h"
#include "test_util.h"

namespace meshlm {
namespace {

namespace fs = std::filesystem;

using test::tiny_model;

// Random values in every slice; the alignment gaps between slices stay zero, as in training.
FullTrainingState random_state(const ModelConfig& cfg, unsigned seed) {
    const ParamLayout layout = transformer_layout(cfg);
    FullTrainingState s;
    s.params.assign(layout.total(), 0.f), s.m.assign(layout.total(), 0.f);
    s.v.assign(layout.total(), 0.f);
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.f, 1.f);
    for (const ParamSlice& sl : layout.slices())
        for (std::size_t i = sl.offset; i < sl.offset + sl.numel; ++i) {
            s.params[i] = normal(rng), s.m[i] = 0.01f * normal(rng);
            s.v[i] = 1e-4f * std::abs(normal(rng));
        }
    s.step = 10;
    return s;
}

TrainerState trainer_state() {
    TrainerState st;
    st.step = 10, st.tokens_seen = 1280, st.seed = 7, st.best_val = 2.5;
    st.config_yaml = "model:\n  n_layer: 2\n";
    return st;
}

using test::bitwise_equal;

void expect_same_state(const FullTrainingState& a, const FullTrainingState& b,
                       const std::string& what) {
    EXPECT_TRUE(bitwise_equal(a.params, b.params)) << what << ": params";
    EXPECT_TRUE(bitwise_equal(a.m, b.m)) << what << ": exp_avg";
    EXPECT_TRUE(bitwise_equal(a.v, b.v)) << what << ": exp_avg_sq";
    EXPECT_EQ(a.step, b.step) << what;
}

class ShardedCheckpoint : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = test::temp_dir("sharded_ckpt");
        full_ = random_state(cfg_, 1);
    }
    std::string write(const std::string& run, const FullTrainingState& s, int d, int m, int z) {
        return write_checkpoint_for_layout(dir_ + "/" + run, trainer_state(), cfg_, s, d, m, z,
                                           CheckpointConfig{});
    }
    ModelConfig cfg_ = tiny_model();
    std::string dir_;
    FullTrainingState full_;
};

TEST_F(ShardedCheckpoint, EachRankHoldsItsChunkAndTheWholeReassemblesBitwise) {
    const std::string ck = write("a", full_, 2, 2, 3);
    EXPECT_EQ(ck, dir_ + "/a/checkpoints/step_10");
    EXPECT_FALSE(fs::exists(ck + "/model.safetensors"));
    EXPECT_FALSE(fs::exists(ck + "/optimizer.safetensors"));
    EXPECT_TRUE(fs::exists(ck + "/layout.json"));
    const TrainerState st = read_checkpoint(ck);
    ASSERT_TRUE(st.sharded());
    EXPECT_EQ(st.layout["data"], 2);
    EXPECT_EQ(st.layout["model"], 2);
    EXPECT_EQ(st.step, 10);
    EXPECT_EQ(st.tokens_seen, 1280u);
    ASSERT_TRUE(st.best_val);
    EXPECT_EQ(*st.best_val, 2.5);

    // Each of the 4 files holds about a quarter of the state: a model rank's local buffer
    // (computed here from the shapes: split tensors halved) cut in two.
    const ParamLayout full = transformer_layout(cfg_);
    std::size_t local = 0;  // floats of one model rank, without alignment padding
    for (const ParamSlice& s : full.slices()) {
        const bool split = s.name == "wte.weight" || s.name.find("c_attn") != std::string::npos ||
                           s.name.find("c_fc") != std::string::npos ||
                           s.name.find("c_proj.weight") != std::string::npos;
        local += split ? s.numel / 2 : s.numel;
    }
    std::size_t total_count = 0;
    for (int d = 0; d < 2; ++d)
        for (int m = 0; m < 2; ++m) {
            SafetensorsFile f(ck + "/" + shard_file_name(d, m));
            const auto count = static_cast<std::size_t>(f.entry("params").shape[0]);
            total_count += count;
            EXPECT_NEAR(static_cast<double>(count), local / 2.0, 0.05 * local) << d << m;
            EXPECT_EQ(f.entry("exp_avg").shape[0], static_cast<std::int64_t>(count));
            EXPECT_EQ(f.i32("step"), std::vector<std::int32_t>{10});
        }
    EXPECT_GE(total_count, 2 * local);  // + the local layouts' alignment gaps
    EXPECT_LT(total_count, 2 * local + 2 * 16 * full.slices().size());

    // Model rank 1's first chunk starts with its vocabulary rows: wte rows V/2..V of the full
    // buffer, placed first in the local layout.
    SafetensorsFile d0m1(ck + "/shard-d0-m1.safetensors");
    const auto p = d0m1.f32("params");
    const ParamSlice& wte = full.at("wte.weight");
    const std::size_t half = wte.numel / 2;
    ASSERT_GE(p.size(), half);
    EXPECT_EQ(0, std::memcmp(p.data(), full_.params.data() + wte.offset + half, half * 4));

    expect_same_state(read_full_state(ck, cfg_), full_, "2 x 2 reassembled");
    std::vector<float> weights(full.total());
    load_checkpoint_model(ck, cfg_, weights.data());
    EXPECT_TRUE(bitwise_equal(weights, full_.params));
    // model.init_from takes the checkpoint or its run directory alike.
    for (const std::string& from : {ck, dir_ + "/a"}) {
        std::vector<float> init(full.total(), 0.f);
        EXPECT_EQ(load_init_weights(from, cfg_, full, init.data()), ck);
        EXPECT_TRUE(bitwise_equal(init, full_.params)) << from;
    }
}

TEST_F(ShardedCheckpoint, ReshardChainIsBitwiseStable) {
    const std::string a = write("a", full_, 2, 2, 3);
    const std::string b = write("b", read_full_state(a, cfg_), 4, 1, 1);
    EXPECT_TRUE(fs::exists(b + "/shard-d3-m0.safetensors"));
    const std::string c = write("c", read_full_state(b, cfg_), 1, 1, 0);
    EXPECT_TRUE(fs::exists(c + "/model.safetensors"));  // 1 x 1: the single-file format
    EXPECT_FALSE(read_checkpoint(c).sharded());
    const std::string d = write("d", read_full_state(c, cfg_), 2, 2, 3);
    for (const std::string& ck : {b, c, d}) expect_same_state(read_full_state(ck, cfg_), full_, ck);
    // Back at 2 x 2 the files are the same bytes.
    for (const char* f : {"shard-d0-m0.safetensors", "shard-d1-m0.safetensors",
                          "shard-d0-m1.safetensors", "shard-d1-m1.safetensors", "layout.json"})
        EXPECT_EQ(test::read_file(a + "/" + f), test::read_file(d + "/" + f)) << f;
}

TEST_F(ShardedCheckpoint, DamagedMissingAndForeignFilesAreRefusedNamingTheFile) {
    const std::string ck = write("a", full_, 2, 2, 3);
    const std::string shard = ck + "/shard-d1-m0.safetensors";
    const std::string bytes = test::read_file(shard);
    auto error_of = [&](auto&& f) -> std::string {
        try {
            f();
        } catch (const InvalidInput& e) {
            return e.what();
        }
        return "(no error)";
    };
    auto read_all = [&] {
        read_checkpoint(ck);
        read_full_state(ck, cfg_);
    };
    std::string flipped = bytes;
    flipped[flipped.size() - 5] ^= 0x10;
    test::write_file(shard, flipped);
    EXPECT_NE(error_of(read_all).find("shard-d1-m0.safetensors has CRC-32"), std::string::npos)
        << error_of(read_all);
    test::write_file(shard, bytes.substr(0, bytes.size() - 8));
    EXPECT_NE(error_of(read_all).find("shard-d1-m0.safetensors has " +
                                      std::to_string(bytes.size() - 8) + " bytes"),
              std::string::npos)
        << error_of(read_all);
    fs::remove(shard);
    EXPECT_NE(error_of(read_all).find("shard-d1-m0.safetensors is missing"), std::string::npos)
        << error_of(read_all);
    test::write_file(shard, bytes);
    EXPECT_EQ(error_of(read_all), "(no error)");
    // Another model config than the manifest's.
    ModelConfig wider = cfg_;
    wider.d_model = 64;
    EXPECT_NE(error_of([&] { read_full_state(ck, wider); }).find("layout.json"), std::string::npos);
    // A manifest that disagrees with trainer.json (edited after the fact).
    const std::string manifest = test::read_file(ck + "/layout.json");
    std::string edited = manifest;
    edited.replace(edited.find("\"zero_stage\": 3"), 15, "\"zero_stage\": 2");
    test::write_file(ck + "/layout.json", edited);
    EXPECT_NE(error_of(read_all).find("layout.json has CRC-32"), std::string::npos);
}

TEST(ShardGeometry, ChunksCoverTheLocalBufferAndMayBeEmpty) {
    const ModelConfig cfg = tiny_model();
    for (int data : {1, 2, 3, 4, 2000}) {
        const ShardGeometry g(cfg, data, 2, 1);
        std::size_t sum = 0;
        for (int d = 0; d < data; ++d) {
            EXPECT_EQ(g.begin(d), g.chunk * d);
            sum += g.count(d);
        }
        EXPECT_EQ(sum, g.local.total()) << data;
        if (data == 2000) {
            EXPECT_EQ(g.count(data - 1), 0u);
        }
    }
    ModelConfig odd = cfg;
    odd.n_head = 1;  // does not split over 2 model ranks
    EXPECT_THROW(ShardGeometry(odd, 1, 2, 0), InvalidInput);
}

// Adafactor's state through the same chain: no first moment, full second moments of the
// unfactored tensors (zero elsewhere in the slot) and the factored statistics, which every shard
// holds whole. Read as AdamW's, the missing first moments are named.
TEST_F(ShardedCheckpoint, AdafactorStateReshardsBitwise) {
    OptimConfig af;
    af.name = "adafactor", af.adafactor_min_dim_size_to_factor = 32;
    FullTrainingState s = random_state(cfg_, 2);
    s.m.clear();
    s.stat_tensors = optimizer_stat_tensors(cfg_, af);
    ASSERT_FALSE(s.stat_tensors.empty());
    const ParamLayout layout = transformer_layout(cfg_);
    for (const ParamSlice& sl : layout.slices())
        if (sl.shape.ndim == 2) std::fill_n(s.v.begin() + sl.offset, sl.numel, 0.f);
    std::mt19937 rng(3);
    for (const StateTensor& t : s.stat_tensors) {
        s.stats.resize(std::max(s.stats.size(), t.offset + t.shape.numel()));
        for (std::int64_t i = 0; i < t.shape.numel(); ++i)
            s.stats[t.offset + i] = 1e-4f * std::generate_canonical<float, 24>(rng);
    }
    const std::string a = write("a", s, 2, 2, 3);
    SafetensorsFile d1m1(a + "/shard-d1-m1.safetensors");
    EXPECT_FALSE(d1m1.has("exp_avg"));
    EXPECT_EQ(d1m1.f32("exp_avg_sq_row.wte.weight"),
              std::vector<float>(s.stats.begin(), s.stats.begin() + 300));
    auto same = [&](const FullTrainingState& x, const std::string& what) {
        expect_same_state(x, s, what);
        EXPECT_TRUE(bitwise_equal(x.stats, s.stats)) << what << ": factored statistics";
    };
    same(read_full_state(a, cfg_, af), "2 x 2");
    const std::string c = write("c", read_full_state(a, cfg_, af), 1, 1, 0);
    SafetensorsFile opt(c + "/optimizer.safetensors");
    EXPECT_FALSE(opt.has("exp_avg_sq.wte.weight"));  // factored: its statistics only
    EXPECT_TRUE(opt.has("exp_avg_sq.ln_f.weight"));
    same(read_full_state(c, cfg_, af), "1 x 1");
    const std::string d = write("d", read_full_state(c, cfg_, af), 2, 2, 3);
    for (const char* f : {"shard-d0-m0.safetensors", "shard-d1-m1.safetensors", "layout.json"})
        EXPECT_EQ(test::read_file(a + "/" + f), test::read_file(d + "/" + f)) << f;
    try {
        read_full_state(a, cfg_);
        FAIL() << "AdamW read Adafactor's state";
    } catch (const InvalidInput& e) {
        EXPECT_NE(std::string(e.what()).find("has no first moments (exp_avg)"), std::string::npos)
            << e.what();
    }
}

// One rank holds the whole buffer as its chunk; stage 3 keeps parameters only in its shard,
// which local_chunk() reads without a gather, and load_local_chunk() restores exactly.
TEST(LearnerLocalChunk, RoundTripsAtEveryStage) {
    const ModelConfig cfg = tiny_model();
    for (int stage : {0, 3}) {
        Learner a(cfg, OptimConfig{}, 1, 8, 10, nullptr, stage);
        a.init_params(3);
        auto c = a.local_chunk();
        ASSERT_EQ(c.begin, 0u);
        ASSERT_EQ(c.count, a.layout().total());
        std::vector<float> m(c.count), v(c.count);
        for (std::size_t i = 0; i < c.count; ++i) m[i] = 0.5f * i, v[i] = 0.25f * i;
        Learner b(cfg, OptimConfig{}, 1, 8, 10, nullptr, stage);
        b.load_local_chunk(c.params, m.data(), v.data(), nullptr, 7);
        EXPECT_EQ(b.step(), 7);
        auto cb = b.local_chunk();
        EXPECT_EQ(0, std::memcmp(cb.params, c.params, c.count * 4)) << stage;
        EXPECT_EQ(0, std::memcmp(cb.m, m.data(), c.count * 4)) << stage;
        EXPECT_EQ(0, std::memcmp(cb.v, v.data(), c.count * 4)) << stage;
        EXPECT_EQ(0, std::memcmp(b.full_params(), a.full_params(), c.count * 4)) << stage;
    }
}

}  // namespace
}  // namespace meshlm

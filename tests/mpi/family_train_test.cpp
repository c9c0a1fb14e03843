// Every family trains alike on any layout: a tiny GPT-J-style model (parallel blocks, partial
// interleaved rotary, untied biased head, z-loss), a tiny Llama-style one (GQA, SwiGLU,
// RMSNorm, rotary, untied head) and one with T5's relative bias through `mpirun ... meshlm train`
// with data parallelism at ZeRO 3 and with tensor parallelism, against one process with the same
// global batch (losses per step and final weights); dropout keyed by (seed, step, layer, global
// row) keeps data-parallel and tensor-parallel runs equal to one process, and resumes bitwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "meshlm/cli/config.h"
#include "meshlm/io/weights.h"
#include "meshlm/model/transformer_layout.h"
#include "test_util.h"
#include "train_runs.h"

namespace meshlm {
namespace {

constexpr int kSteps = 12;

struct Family {
    std::string name, flags;
    ModelConfig model;
};

// Resumes `run` (trained in dir/from, with a checkpoint at step 6) on np ranks into
// dir/branch: the remaining steps' losses and the final weights are bitwise the run's.
void expect_resumes_bitwise(const test::TrainedRun& run, const std::string& dir,
                            const std::string& from, int np, const ModelConfig& model) {
    const std::string branch = dir + "/branch";
    const test::TrainedRun resumed = test::train_run(
        np, branch,
        " --resume " + dir + "/" + from + "/checkpoints/step_6 --config.log.dir=" + branch, model);
    ASSERT_EQ(resumed.steps.size(), static_cast<std::size_t>(kSteps - 6)) << resumed.output;
    for (int s = 6; s < kSteps; ++s)
        EXPECT_EQ(run.steps[s]["loss"], resumed.steps[s - 6]["loss"]) << "step " << s + 1;
    EXPECT_EQ(run.weights, resumed.weights) << dir;
}

Family gptj() {
    Family f{"gptj",
             " --config.model.block=parallel --config.model.position=rope"
             " --config.model.rope_style=interleaved --config.model.rope_dim=8"
             " --config.model.qkv_bias=false --config.model.proj_bias=false"
             " --config.model.tied_head=false --config.model.head_bias=true"
             " --config.model.z_loss=1e-4"
             // Adam's first update of an element is g / (|g| + eps): with the default 1e-8, an
             // embedding element whose gradient cancels to ~1e-8 (seen: wte[135, 20]) turns
             // summation-order rounding into 2e-4 of weight by step 12 (tensor-parallel gradients
             // themselves match to 1e-5 with z-loss: tp_mpi). 1e-6 is below every real gradient.
             " --config.optim.eps=1e-6",
             test::tiny_model()};
    ModelConfig& m = f.model;
    m.block = "parallel", m.position = "rope", m.rope_style = "interleaved", m.rope_dim = 8;
    m.qkv_bias = m.proj_bias = false, m.tied_head = false, m.head_bias = true, m.z_loss = 1e-4f;
    return f;
}

Family llama() {
    Family f{"llama",
             " --config.model.n_head=4 --config.model.n_kv_head=2 --config.model.norm=rmsnorm"
             " --config.model.norm_bias=false --config.model.position=rope"
             " --config.model.mlp=swiglu --config.model.d_ff=48 --config.model.qkv_bias=false"
             " --config.model.proj_bias=false --config.model.mlp_bias=false"
             " --config.model.tied_head=false",
             test::tiny_model()};
    ModelConfig& m = f.model;
    m.n_head = 4, m.n_kv_head = 2, m.norm = "rmsnorm", m.norm_bias = false, m.position = "rope";
    m.mlp = "swiglu", m.d_ff = 48, m.qkv_bias = m.proj_bias = m.mlp_bias = false;
    m.tied_head = false;
    return f;
}

Family dropout() {
    Family f{"dropout",
             " --config.model.dropout_embd=0.1 --config.model.dropout_attn=0.1"
             " --config.model.dropout_resid=0.1",
             test::tiny_model()};
    f.model.dropout_embd = f.model.dropout_attn = f.model.dropout_resid = 0.1f;
    return f;
}

// muP (seed 002): maximal-update init, 1/d_head attention, per-tensor learning rates; the
// multipliers follow each element's tensor through ZeRO chunks and tensor-parallel shards.
Family mup() {
    Family f{"mup",
             " --config.model.mup.enabled=true --config.model.tied_head=false"
             " --config.model.mup.d_base=8 --config.model.mup.q_init=zero"
             " --config.model.norm=rmsnorm --config.model.position=rope"
             " --config.optim.mup_rule=mup --config.optim.mup_eps_scaling=true",
             test::tiny_model()};
    ModelConfig& m = f.model;
    m.mup_enabled = true, m.tied_head = false, m.mup_d_base = 8, m.mup_q_init = "zero";
    m.norm = "rmsnorm", m.position = "rope";
    return f;
}

// Seed 003's T5 relative bias (its table split with the heads under TP, in the embeddings'
// unit under ZeRO 3), a logit scale and GPT-J's truncated-normal init. optim.eps 1e-6 as gptj's
// (above): with the default 1e-8, Adam's first steps turn the TP layout's summation-order
// rounding of near-cancelling gradients into 1.25e-5 of weight by step 12 (7e-7 with 1e-6).
Family t5() {
    Family f{"t5",
             " --config.model.n_head=4 --config.model.n_kv_head=2 --config.model.position=t5_bias"
             " --config.model.t5.num_buckets=8 --config.model.t5.max_distance=12"
             " --config.model.logit_scale=0.5 --config.model.init=gptj --config.optim.eps=1e-6",
             test::tiny_model()};
    ModelConfig& m = f.model;
    m.n_head = 4, m.n_kv_head = 2, m.position = "t5_bias", m.t5_buckets = 8;
    m.t5_max_distance = 12, m.logit_scale = 0.5f, m.init = "gptj";
    return f;
}

std::string flags(const Family& f, const std::string& dir, int batch, int data, int model,
                  int stage, int checkpoint_interval = 0) {
    return test::tiny_flags(dir, kSteps, batch, 1, checkpoint_interval) + f.flags +
           test::mesh_flags(data, model, stage);
}

class FamilyTraining : public ::testing::TestWithParam<Family> {};

TEST_P(FamilyTraining, DataAndTensorParallelMatchOneProcess) {
    const Family& f = GetParam();
    const std::string dir = test::temp_dir("family_" + f.name);
    const test::TrainedRun ref =
        test::train_run(1, dir + "/ref", flags(f, dir + "/ref", 4, 1, 1, 0), f.model);
    ASSERT_EQ(ref.steps.size(), static_cast<std::size_t>(kSteps)) << ref.output;
    const test::TrainedRun dp =
        test::train_run(2, dir + "/dp", flags(f, dir + "/dp", 2, 2, 1, 3), f.model);
    test::expect_same_training(ref, dp, kSteps, f.name + ": DP 2, ZeRO 3");
    const test::TrainedRun tp =
        test::train_run(2, dir + "/tp", flags(f, dir + "/tp", 4, 1, 2, 0), f.model);
    test::expect_same_training(ref, tp, kSteps, f.name + ": TP 2");
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyTraining,
                         ::testing::Values(gptj(), llama(), dropout(), mup(), t5()),
                         [](const auto& info) { return info.param.name; });

// Transformer-VQ (seed 001): quantized keys, linear-time attention with the compressed cache
// (blocks of 4 in 16-token rows), a squared-ReLU MLP, and the codebook's moving averages over
// each step's global batch (summed over micro-batches and data ranks, then folded in): data
// parallelism at every ZeRO stage, tensor parallelism and gradient accumulation train as one
// process does, the codebook's sums and counts included (decay 0.5 so 12 steps move them far),
// and resume bitwise.
Family vq() {
    Family f{"vq",
             " --config.model.attention=vq --config.model.position=none"
             " --config.model.norm=rmsnorm --config.model.norm_bias=false"
             " --config.model.mlp=sqrelu --config.model.vq.block_len=4"
             " --config.model.vq.n_code=8 --config.model.vq.d_k=8 --config.model.vq.d_v=32"
             " --config.model.vq.c_gamma=0.5 --config.model.vq.c_beta=0.01",
             test::tiny_model()};
    ModelConfig& m = f.model;
    m.attention = "vq", m.position = "none", m.norm = "rmsnorm", m.norm_bias = false;
    m.mlp = "sqrelu", m.vq_block_len = 4, m.vq_codes = 8, m.vq_d_k = 8, m.vq_d_v = 32;
    m.vq_c_gamma = 0.5f, m.vq_c_beta = 0.01f;
    return f;
}

TEST(FamilyTraining, VqShardsAndResumes) {
    const Family f = vq();
    const std::string dir = test::temp_dir("family_vq");
    const test::TrainedRun ref =
        test::train_run(1, dir + "/ref", flags(f, dir + "/ref", 4, 1, 1, 0), f.model);
    ASSERT_EQ(ref.steps.size(), static_cast<std::size_t>(kSteps)) << ref.output;
    EXPECT_TRUE(ref.steps.back().contains("vq")) << ref.output;
    test::TrainedRun dp3;
    for (int stage : {0, 1, 2, 3}) {
        test::TrainedRun dp = test::train_run(
            2, dir + "/dp" + std::to_string(stage),
            flags(f, dir + "/dp" + std::to_string(stage), 2, 2, 1, stage, 6), f.model);
        test::expect_same_training(ref, dp, kSteps, "vq: DP 2, ZeRO " + std::to_string(stage));
        if (stage == 3) dp3 = std::move(dp);
    }
    // Tensor parallelism splits the value / gate path; queries, keys and the codebook are
    // replicated, and their gradients summed over the model ranks.
    const test::TrainedRun tp =
        test::train_run(2, dir + "/tp", flags(f, dir + "/tp", 4, 1, 2, 0), f.model);
    test::expect_same_training(ref, tp, kSteps, "vq: TP 2");
    // Truncated backpropagation (rows of 16 in chunks of 8): two optimizer steps per batch, each
    // rank carrying its rows' attention state; data parallelism equals one process.
    Family t = f;
    t.flags += " --config.model.vq.update_len=8";
    const test::TrainedRun tref =
        test::train_run(1, dir + "/tref", flags(t, dir + "/tref", 4, 1, 1, 0), t.model);
    ASSERT_EQ(tref.steps.size(), static_cast<std::size_t>(kSteps)) << tref.output;
    const test::TrainedRun tdp =
        test::train_run(2, dir + "/tdp", flags(t, dir + "/tdp", 2, 2, 1, 1), t.model);
    test::expect_same_training(tref, tdp, kSteps, "vq: update_len 8, DP 2, ZeRO 1");
    EXPECT_NE(tref.steps.back()["loss"], ref.steps.back()["loss"]);
    // Two micro-batches of 2 rows: the statistics add up before the one fold per step.
    const test::TrainedRun accum = test::train_run(
        1, dir + "/accum",
        test::tiny_flags(dir + "/accum", kSteps, 2, 2, 0) + f.flags + test::mesh_flags(1, 1, 0),
        f.model);
    test::expect_same_training(ref, accum, kSteps, "vq: 2 micro-batches");
    expect_resumes_bitwise(dp3, dir, "dp3", 2, f.model);
}

// Dropout masks come from the counter-based RNG: a resumed run draws the masks the
// uninterrupted run drew, so its losses and weights are bitwise the same.
TEST(FamilyTraining, DropoutResumesBitwise) {
    const Family f = dropout();
    const std::string dir = test::temp_dir("family_resume");
    const test::TrainedRun whole =
        test::train_run(1, dir + "/whole", flags(f, dir + "/whole", 4, 1, 1, 0, 6), f.model);
    ASSERT_EQ(whole.steps.size(), static_cast<std::size_t>(kSteps)) << whole.output;
    expect_resumes_bitwise(whole, dir, "whole", 1, f.model);
    // Dropout is on: the same run without it trains differently.
    EXPECT_NE(whole.steps[kSteps - 1]["loss"],
              test::train_run(1, dir + "/plain", test::tiny_flags(dir + "/plain", kSteps, 4, 1, 0),
                              test::tiny_model())
                  .steps[kSteps - 1]["loss"]);
}

// Lion's one momentum buffer is sharded by ZeRO and tensor parallelism like AdamW's moments:
// both layouts train as one process does, and a ZeRO-3 run resumes bitwise from its shards.
TEST(FamilyTraining, LionShardsAndResumes) {
    Family f = llama();
    f.name = "lion";
    f.flags += " --config.optim.name=lion --config.optim.lr=1e-3 --config.optim.beta2=0.99";
    const std::string dir = test::temp_dir("family_lion");
    const test::TrainedRun ref =
        test::train_run(1, dir + "/ref", flags(f, dir + "/ref", 4, 1, 1, 0), f.model);
    ASSERT_EQ(ref.steps.size(), static_cast<std::size_t>(kSteps)) << ref.output;
    const test::TrainedRun dp =
        test::train_run(2, dir + "/dp", flags(f, dir + "/dp", 2, 2, 1, 3, 6), f.model);
    test::expect_same_training(ref, dp, kSteps, "lion: DP 2, ZeRO 3");
    const test::TrainedRun tp =
        test::train_run(2, dir + "/tp", flags(f, dir + "/tp", 4, 1, 2, 0), f.model);
    test::expect_same_training(ref, tp, kSteps, "lion: TP 2");
    expect_resumes_bitwise(dp, dir, "dp", 2, f.model);
}

// Adafactor's statistics are per whole tensor while ranks hold ZeRO chunks and tensor-parallel
// shards: every rank's partial sums are added over the data ranks (chunks) and the model ranks
// (shards), so every ZeRO stage on 2 data ranks, TP 2 and TP 2 x DP 2 train as one process does
// (matrices factored from 32 up, so the tiny model's matrices keep row and column statistics
// and its norm gains full second moments), and a ZeRO-3 run resumes bitwise from its shards
// (and on TP 2, through the single-process layout).
TEST(FamilyTraining, AdafactorShardsAndResumes) {
    Family f = llama();
    f.name = "adafactor";
    f.flags +=
        " --config.optim.name=adafactor --config.optim.lr=1e-2 --config.optim.grad_clip=0"
        " --config.optim.adafactor_min_dim_size_to_factor=32";
    const std::string dir = test::temp_dir("family_adafactor");
    const test::TrainedRun ref =
        test::train_run(1, dir + "/ref", flags(f, dir + "/ref", 4, 1, 1, 0), f.model);
    ASSERT_EQ(ref.steps.size(), static_cast<std::size_t>(kSteps)) << ref.output;
    test::TrainedRun dp3;
    for (int stage : {1, 2, 3}) {
        const std::string d = dir + "/dp" + std::to_string(stage);
        test::TrainedRun dp =
            test::train_run(2, d, flags(f, d, 2, 2, 1, stage, stage == 3 ? 6 : 0), f.model);
        test::expect_same_training(ref, dp, kSteps,
                                   "adafactor: DP 2, ZeRO " + std::to_string(stage));
        if (stage == 3) dp3 = std::move(dp);
    }
    const test::TrainedRun tp =
        test::train_run(2, dir + "/tp", flags(f, dir + "/tp", 4, 1, 2, 0), f.model);
    test::expect_same_training(ref, tp, kSteps, "adafactor: TP 2");
    const test::TrainedRun both =
        test::train_run(4, dir + "/both", flags(f, dir + "/both", 2, 2, 2, 3), f.model);
    test::expect_same_training(ref, both, kSteps, "adafactor: TP 2 x DP 2, ZeRO 3");
    expect_resumes_bitwise(dp3, dir, "dp3", 2, f.model);
    // Another layout reads the shards through the single-process layout: TP 2 continues the
    // ZeRO-3 run as it would have gone on.
    const std::string moved = dir + "/moved";
    const test::TrainedRun tp_resumed =
        test::train_run(2, moved,
                        " --resume " + dir + "/dp3/checkpoints/step_6 --config.log.dir=" + moved +
                            test::mesh_flags(1, 2, 0) + " --config.train.batch_size=4",
                        f.model);
    test::expect_same_training(dp3, tp_resumed, kSteps - 6, "adafactor: ZeRO 3 resumed on TP 2");
}

// The coordinate check's numbers are sums over every rank's rows, heads and chunks: a muP model
// gives the same mean |activation| per site and mean |update| / lr per tensor on DP 2 / ZeRO 3
// and on TP 2 as on one process.
TEST(FamilyTraining, CoordCheckIsTheSameSharded) {
    const Family f = mup();
    const std::string dir = test::temp_dir("family_coord");
    const std::string coord = " --config.train.coord_interval=2";
    const test::TrainedRun ref =
        test::train_run(1, dir + "/ref", flags(f, dir + "/ref", 4, 1, 1, 0) + coord, f.model);
    for (const auto& [what, run] :
         {std::pair{
              std::string("DP 2, ZeRO 3"),
              test::train_run(2, dir + "/dp", flags(f, dir + "/dp", 2, 2, 1, 3) + coord, f.model)},
          {std::string("TP 2"),
           test::train_run(2, dir + "/tp", flags(f, dir + "/tp", 4, 1, 2, 0) + coord, f.model)}}) {
        ASSERT_EQ(run.steps.size(), ref.steps.size()) << what;
        int compared = 0;
        for (std::size_t s = 0; s < ref.steps.size(); ++s) {
            ASSERT_EQ(ref.steps[s].contains("coord"), (s + 1) % 2 == 0) << what << " step " << s;
            if (!ref.steps[s].contains("coord")) continue;
            for (const char* kind : {"coord", "update"}) {
                const auto &a = ref.steps[s][kind], &b = run.steps[s][kind];
                ASSERT_EQ(a.size(), b.size()) << what << " " << kind;
                for (const auto& [key, v] : a.items()) {
                    const double x = v, y = b.at(key);
                    EXPECT_NEAR(y, x, 1e-4 * std::abs(x) + 1e-9)
                        << what << " step " << s + 1 << " " << kind << " " << key;
                    ++compared;
                }
            }
        }
        EXPECT_GT(compared, 100) << what;
    }
}

// Recomputation reruns blocks in the backward, collectives and parameter gathers included: on
// tensor-parallel and ZeRO-3 layouts it trains bitwise as keeping every activation does.
TEST(FamilyTraining, RecomputeTrainsBitwiseOnShardedLayouts) {
    struct Case {
        Family f;
        int data, model, stage;
        const char* recompute;
    };
    for (const Case& c : {Case{dropout(), 1, 2, 0, "block"}, Case{gptj(), 1, 2, 0, "attention"},
                          Case{llama(), 2, 1, 3, "block"}}) {
        const std::string what = c.f.name + ", recompute " + c.recompute;
        const std::string dir = test::temp_dir(std::string("recompute_") + c.f.name);
        const int batch = 4 / c.data;
        const test::TrainedRun keep =
            test::train_run(2, dir + "/keep",
                            flags(c.f, dir + "/keep", batch, c.data, c.model, c.stage), c.f.model);
        ASSERT_EQ(keep.steps.size(), static_cast<std::size_t>(kSteps)) << keep.output;
        const test::TrainedRun rerun =
            test::train_run(2, dir + "/rerun",
                            flags(c.f, dir + "/rerun", batch, c.data, c.model, c.stage) +
                                " --config.train.recompute=" + c.recompute,
                            c.f.model);
        ASSERT_EQ(rerun.steps.size(), static_cast<std::size_t>(kSteps)) << rerun.output;
        EXPECT_NE(rerun.output.find(std::string("(recompute: ") + c.recompute + ")"),
                  std::string::npos)
            << rerun.output;
        for (int s = 0; s < kSteps; ++s)
            EXPECT_EQ(keep.steps[s]["loss"], rerun.steps[s]["loss"]) << what << ", step " << s + 1;
        EXPECT_EQ(keep.weights, rerun.weights) << what;
    }
}

// ZeRO-3 in bf16 gathers every parameter as bf16: rank 0 sends exactly half the bytes of its
// gathers less than the same run in fp32 -- the blocks' twice a step and the embeddings' and
// ln_f's once, each (unit floats - rank 0's part) * 4 in fp32; the reduce-scatters (gradients
// stay fp32) are unchanged.
void expect_half_gathers(const Family& f, const std::string& dir, const test::TrainedRun& bf16) {
    const test::TrainedRun fp32 =
        test::train_run(2, dir + "/dp32", flags(f, dir + "/dp32", 2, 2, 1, 3), f.model);
    ASSERT_EQ(fp32.steps.size(), static_cast<std::size_t>(kSteps)) << fp32.output;
    const ParamLayout layout = transformer_layout(f.model);
    const std::size_t chunk = ((layout.total() + 1) / 2 + 15) / 16 * 16;
    // The floats rank 0 receives when [lo, hi) is gathered: what lies outside its chunk.
    auto received = [&](std::size_t lo, std::size_t hi) {
        return (hi - lo) - (std::min(hi, chunk) > lo ? std::min(hi, chunk) - lo : 0);
    };
    const auto spans = test::block_spans(layout, f.model.n_layer);
    std::size_t blocks = 0;
    for (int l = 0; l < f.model.n_layer; ++l) blocks += received(spans.lo[l], spans.hi[l]);
    const std::size_t root =
        received(0, spans.lo[0]) + received(spans.hi[f.model.n_layer - 1], spans.end);
    ASSERT_GT(root, 0u);
    const std::uint64_t saved = (2 * blocks + root) * 2;  // 2 bytes less per float gathered
    for (int s = 0; s < kSteps; ++s)
        EXPECT_EQ(bf16.steps[s]["comm_bytes"].get<std::uint64_t>() + saved,
                  fp32.steps[s]["comm_bytes"].get<std::uint64_t>())
            << f.name << " step " << s + 1;
}

// bf16 precision rounds GEMM operands element by element and sums in fp32. Sharded runs sum
// in another order, and where an fp32 value lands near a bf16 rounding boundary the last-bit
// difference becomes a bf16-ulp one (2^-8), so they cannot match one process to fp32's 1e-5:
// instead they must stay closer to the one-process bf16 run than fp32 training is (sharding
// adds less than bf16 itself), with step 1, before any update, within 1e-4. A bf16 run resumes
// bitwise from its fp32 checkpoint.
TEST(FamilyTraining, Bf16ShardsAndResumes) {
    for (const Family& f : {gptj(), llama()}) {
        const std::string dir = test::temp_dir("bf16_" + f.name);
        const std::string bf16 = " --config.train.precision=bf16";
        const test::TrainedRun ref =
            test::train_run(1, dir + "/ref", flags(f, dir + "/ref", 4, 1, 1, 0, 6) + bf16, f.model);
        ASSERT_EQ(ref.steps.size(), static_cast<std::size_t>(kSteps)) << ref.output;
        EXPECT_NE(ref.output.find("precision: bf16"), std::string::npos) << ref.output;
        const test::TrainedRun fp32 =
            test::train_run(1, dir + "/fp32", flags(f, dir + "/fp32", 4, 1, 1, 0), f.model);
        const test::RunDistance yardstick =
            test::run_distance(ref, fp32, f.name + ": bf16 against fp32, one process");
        ASSERT_GT(yardstick.weights, 0) << f.name << ": bf16 changed nothing";
        for (const auto& [what, sub, args] :
             {std::tuple{"DP 2, ZeRO 3", "/dp", flags(f, dir + "/dp", 2, 2, 1, 3)},
              std::tuple{"TP 2", "/tp", flags(f, dir + "/tp", 4, 1, 2, 0)}}) {
            const std::string label = f.name + ": bf16, " + what;
            const test::TrainedRun got = test::train_run(2, dir + sub, args + bf16, f.model);
            ASSERT_EQ(got.steps.size(), static_cast<std::size_t>(kSteps)) << got.output;
            const double a = ref.steps[0]["loss"], b = got.steps[0]["loss"];
            EXPECT_LE(std::abs(a - b), 1e-4 * std::abs(a)) << label << ", step 1";
            const test::RunDistance d = test::run_distance(ref, got, label);
            EXPECT_LT(d.loss, yardstick.loss) << label;
            EXPECT_LT(d.weights, yardstick.weights) << label;
            if (std::string(sub) == "/dp") {
                expect_half_gathers(f, dir, got);
                // `meshlm info` plans the bf16 run's working buffers (its bf16 receive buffers).
                const std::regex working("working ([0-9]+)");
                std::smatch trained, planned;
                const auto info = test::run_command(test::meshlm_binary() + " info" + args + bf16);
                ASSERT_TRUE(std::regex_search(got.output, trained, working)) << got.output;
                ASSERT_TRUE(std::regex_search(info.output, planned, working)) << info.output;
                EXPECT_EQ(trained[1], planned[1]) << info.output;
            }
        }
        expect_resumes_bitwise(ref, dir, "ref", 1, f.model);
    }
}

}  // namespace
}  // namespace meshlm

namespace meshlm {
namespace {

// The default run's vocabulary (257) divides by no model-rank count: it is padded inside,
// so tensor parallelism runs on the default config (the built-in configs/default.yaml, a
// Transformer-VQ whose value width 224 splits over the model ranks), and its files keep 257 rows.
TEST(DefaultConfig, TrainsTensorParallelOnTwoRanks) {
    const std::string dir = test::temp_dir("default_tp") + "/run";
    auto r = test::run_train(2,
                             " --config.parallel.model=2 --config.train.steps=3"
                             " --config.train.threads=1 --config.log.sample_tokens=0"
                             " --config.train.final_eval_batches=2 --config.log.dir=" +
                                 dir);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("tensor parallel: 2 model ranks per replica"), std::string::npos)
        << r.output;
    const ModelConfig m = load_config(kDefaultRecipe, {}).model;  // the default model
    EXPECT_TRUE(m.vq());
    EXPECT_EQ(m.vocab_size, 257);
    std::vector<float> w(transformer_layout(m).total());
    EXPECT_NO_THROW(load_weights(dir + "/model.safetensors", transformer_layout(m), w.data()));
}

}  // namespace
}  // namespace meshlm

// Sharded checkpoints through `mpirun ... meshlm train`: a run at (data 2, model 2, ZeRO 3)
// writes one shard per rank (no model.safetensors), and its step-10 checkpoint resumes at
// (1, 1), (4, 1) and (2, 2, ZeRO 1) — the last from each rank's own file — continuing with the
// losses and final weights of an uninterrupted one-process run with the same global batch.
// `meshlm reshard` rewrites it for one process and as a Hugging Face directory; sample and eval
// open sharded checkpoints; a shard write failing on one rank fails the job and leaves no
// checkpoint behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "meshlm/io/weights.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"
#include "test_util.h"
#include "train_runs.h"

namespace meshlm {
namespace {

namespace fs = std::filesystem;

constexpr int kSteps = 20;

using test::tiny_model;

std::string mesh(int data, int model, int stage) {
    return test::mesh_flags(data, model, stage);
}

std::string flags(const std::string& dir, int batch, int data, int model, int stage) {
    return test::tiny_flags(dir, kSteps, batch, 1, 10) + mesh(data, model, stage);
}

using test::expect_same_training;
using test::TrainedRun;

TrainedRun train(int np, const std::string& dir, const std::string& args) {
    return test::train_run(np, dir, args, tiny_model());
}

test::CommandResult meshlm(const std::string& args) {
    return test::run_command(std::string(MESHLM_BINARY) + " " + args);
}

class ShardedCheckpointTraining : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = new std::string(test::temp_dir("ckpt_shard"));
        ref_ = new TrainedRun(train(1, *dir_ + "/ref", flags(*dir_ + "/ref", 4, 1, 1, 0)));
        sharded_ = new TrainedRun(train(4, *dir_ + "/a", flags(*dir_ + "/a", 2, 2, 2, 3)));
    }
    static std::string ckpt() { return *dir_ + "/a/checkpoints/step_10"; }
    static std::string* dir_;
    static TrainedRun *ref_, *sharded_;
};
std::string* ShardedCheckpointTraining::dir_ = nullptr;
TrainedRun* ShardedCheckpointTraining::ref_ = nullptr;
TrainedRun* ShardedCheckpointTraining::sharded_ = nullptr;

TEST_F(ShardedCheckpointTraining, EachRankWritesItsOwnShard) {
    expect_same_training(*ref_, *sharded_, kSteps, "2 x 2 stage 3 run");
    ASSERT_TRUE(fs::exists(ckpt() + "/trainer.json")) << sharded_->output;
    EXPECT_FALSE(fs::exists(ckpt() + "/model.safetensors"));
    EXPECT_FALSE(fs::exists(ckpt() + "/optimizer.safetensors"));
    EXPECT_TRUE(fs::exists(ckpt() + "/layout.json"));
    // The state is params + two moments in f32: 12 bytes per parameter; the four shards hold
    // about a quarter each (a little more: replicated tensors, headers, alignment).
    const double quarter = 12.0 * transformer_layout(tiny_model()).count() / 4;
    int shards = 0;
    for (const auto& e : fs::directory_iterator(ckpt())) {
        const std::string name = e.path().filename().string();
        if (name.rfind("shard-", 0) != 0) continue;
        ++shards;
        const double bytes = static_cast<double>(fs::file_size(e.path()));
        EXPECT_GT(bytes, 0.95 * quarter) << name;
        EXPECT_LT(bytes, 1.15 * quarter) << name;
    }
    EXPECT_EQ(shards, 4);
    for (int d = 0; d < 2; ++d)
        for (int m = 0; m < 2; ++m)
            EXPECT_TRUE(fs::exists(ckpt() + "/shard-d" + std::to_string(d) + "-m" +
                                   std::to_string(m) + ".safetensors"));
}

TEST_F(ShardedCheckpointTraining, ResumesAtOtherLayouts) {
    struct Case {
        int data, model, stage;
    };
    for (const Case c :
         {Case{1, 1, 0}, Case{4, 1, 2}, Case{4, 1, 3}, Case{2, 2, 1}, Case{2, 2, 3}}) {
        const std::string what = "resumed at data " + std::to_string(c.data) + " x model " +
                                 std::to_string(c.model) + " stage " + std::to_string(c.stage);
        const std::string dir = *dir_ + "/resume_d" + std::to_string(c.data) + "m" +
                                std::to_string(c.model) + "z" + std::to_string(c.stage);
        TrainedRun got = train(c.data * c.model, dir,
                               " --resume " + ckpt() + mesh(c.data, c.model, c.stage) +
                                   " --config.train.batch_size=" + std::to_string(4 / c.data) +
                                   " --config.log.dir=" + dir);
        expect_same_training(*ref_, got, kSteps - 10, what);
        // At the same mesh each rank reads only its own file.
        EXPECT_EQ(got.output.find("each rank read its own shard") != std::string::npos,
                  c.data == 2 && c.model == 2)
            << what << "\n"
            << got.output;
    }
}

TEST_F(ShardedCheckpointTraining, ReshardsForOneProcessAndHuggingFace) {
    const std::string one = *dir_ + "/one";
    auto r = meshlm("reshard --checkpoint " + ckpt() + " --out " + one);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(fs::exists(one + "/checkpoints/step_10/model.safetensors"));
    // The resharded run directory continues in itself, with the global batch on one rank.
    TrainedRun got = train(1, one, " --resume " + one);
    expect_same_training(*ref_, got, kSteps - 10, "resharded to 1 x 1");
    r = meshlm("reshard --checkpoint " + ckpt() + " --out " + one);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--force"), std::string::npos) << r.output;
    r = meshlm("reshard --checkpoint " + ckpt() + " --out " + *dir_ + "/bad --model 3");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_FALSE(fs::exists(*dir_ + "/bad"));

    // --hf from the run directory (its latest checkpoint, step 20: the final weights), read back
    // by `convert --from hf`.
    r = meshlm("reshard --checkpoint " + *dir_ + "/a --out " + *dir_ + "/hf --hf");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = meshlm("convert --from hf --to meshlm " + *dir_ + "/hf " + *dir_ + "/hf_back");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const ParamLayout layout = transformer_layout(tiny_model());
    std::vector<float> back(layout.total(), 0.f);
    load_weights(*dir_ + "/hf_back/model.safetensors", layout, back.data());
    for (const ParamSlice& s : layout.slices())
        for (std::size_t i = s.offset; i < s.offset + s.numel; ++i)
            ASSERT_EQ(back[i], sharded_->weights[i]) << s.name;
    r = meshlm("sample --checkpoint " + ckpt() + " --prompt ab --max-new-tokens 4 --temperature 0");
    EXPECT_EQ(r.exit_code, 0) << r.output;
}

// Rank 1 fails while writing its shard: every rank exits non-zero, naming the cause, and
// neither step_10 nor a staging directory is left.
TEST_F(ShardedCheckpointTraining, AShardWriteFailureFailsEveryRank) {
    const std::string dir = *dir_ + "/fault";
    auto r = test::run_train(4, flags(dir, 2, 2, 2, 3),
                             "MESHLM_FAULT_RANK=1 MESHLM_FAULT_AT=checkpoint_shard:10");
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("writing the checkpoint of step 10 failed on rank 1: injected fault at "
                            "checkpoint_shard:10 on rank 1"),
              std::string::npos)
        << r.output;
    EXPECT_FALSE(fs::exists(dir + "/checkpoints/step_10"));
    EXPECT_FALSE(fs::exists(dir + "/checkpoints/latest"));
    for (const auto& e : fs::directory_iterator(dir + "/checkpoints"))
        ADD_FAILURE() << "left behind: " << e.path();
}

// A damaged shard is refused at the same mesh too, where only its own rank reads it: every
// rank stops with the message naming the file (exit 2) before training.
TEST_F(ShardedCheckpointTraining, ADamagedShardIsRefusedAtTheSameMesh) {
    const std::string copy = *dir_ + "/damaged/checkpoints/step_10";
    fs::create_directories(copy);
    fs::copy(ckpt(), copy);
    const std::string shard = copy + "/shard-d1-m1.safetensors";
    std::string bytes = test::read_file(shard);
    bytes[bytes.size() / 2] ^= 0x20;
    test::write_file(shard, bytes);
    auto r = test::run_train(4, " --resume " + copy + " --config.log.dir=" + *dir_ + "/damaged");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("shard-d1-m1.safetensors has CRC-32"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("step     11"), std::string::npos) << r.output;
}

// On real text: eval and sample open a sharded checkpoint; its weights (the last step's) score
// exactly as the run's final model.safetensors.
TEST(ShardedCheckpointText, EvalAndSampleOpenIt) {
    const std::string dir = test::temp_dir("ckpt_shard_text");
    test::write_test_corpus(dir);
    auto r = test::run_train(
        4, test::gpt2_config() +
               " --config.model.n_layer=2 --config.model.d_model=32 --config.model.n_head=2"
               " --config.model.vocab_size=258 --config.model.max_seq_len=16"
               " --config.train.seq_len=16 --config.train.steps=4 --config.train.threads=1"
               " --config.train.peak_gflops=100 --config.train.batch_size=2"
               " --config.log.sample_tokens=0 --config.checkpoint.interval=4"
               " --config.data.path=" +
               dir + "/corpus.txt --config.data.cache_dir=" + dir + "/cache" + mesh(2, 2, 2) +
               " --config.log.dir=" + dir + "/run");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string ck = dir + "/run/checkpoints/step_4";
    ASSERT_TRUE(fs::exists(ck + "/shard-d1-m1.safetensors"));
    auto from_ckpt = meshlm("eval --checkpoint " + ck + " --threads 1");
    auto from_run = meshlm("eval --checkpoint " + dir + "/run --threads 1");
    ASSERT_EQ(from_ckpt.exit_code, 0) << from_ckpt.output;
    ASSERT_EQ(from_run.exit_code, 0) << from_run.output;
    std::smatch a, b;
    const std::regex loss("loss [0-9.]+ nats/token");
    ASSERT_TRUE(std::regex_search(from_ckpt.output, a, loss)) << from_ckpt.output;
    ASSERT_TRUE(std::regex_search(from_run.output, b, loss)) << from_run.output;
    EXPECT_EQ(a.str(), b.str());
    auto s = meshlm("sample --checkpoint " + ck + " --prompt Doc --max-new-tokens 4");
    EXPECT_EQ(s.exit_code, 0) << s.output;
}

}  // namespace
}  // namespace meshlm

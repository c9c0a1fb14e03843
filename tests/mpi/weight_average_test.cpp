// Checkpoint averaging (train.average, train/weight_average.h) through `meshlm train`: the
// written model.avg.safetensors is the mean of the weights the run's own checkpoints hold at the
// window's steps, on one process, at data parallelism with ZeRO 3 and under tensor parallelism;
// a resumed run writes the same bytes as an uninterrupted one (and does not once the window is
// lost, or fails its CRC-32); a rollback forgets the snapshots after its checkpoint; a window that
// cannot be written follows checkpoint.on_error; `meshlm eval --weights avg` scores it; the options
// are validated by name.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "meshlm/cli/config.h"
#include "meshlm/core/error.h"
#include "meshlm/io/checkpoint.h"
#include "meshlm/io/safetensors.h"
#include "meshlm/io/weights.h"
#include "meshlm/model/transformer_layout.h"
#include "test_util.h"
#include "train_runs.h"

namespace meshlm {
namespace {

namespace fs = std::filesystem;

// 11 steps, a checkpoint every 2 (all kept), a snapshot every 2 in a window of 3: the final
// average is the mean of steps 6, 8 and 10 (11 is no snapshot step).
std::string average_flags(const std::string& dir, int batch) {
    return test::tiny_flags(dir, 11, batch, 1, 2) +
           " --config.checkpoint.keep_last=10 --config.train.average.every=2"
           " --config.train.average.last=3";
}

std::vector<float> read_weights(const std::string& path) {
    const ParamLayout layout = transformer_layout(test::tiny_model());
    std::vector<float> w(layout.total());
    load_weights(path, layout, w.data());
    return w;
}

// The mean of the weights of checkpoints step_<s> of `run`, computed from the files alone.
std::vector<float> checkpoint_mean(const std::string& run, const std::vector<int>& steps) {
    const std::size_t n = transformer_layout(test::tiny_model()).total();
    std::vector<double> sum(n, 0.0);
    std::vector<float> w(n);
    for (int s : steps) {
        load_checkpoint_model(run + "/checkpoints/step_" + std::to_string(s), test::tiny_model(),
                              w.data());
        for (std::size_t i = 0; i < n; ++i) sum[i] += w[i];
    }
    std::vector<float> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(sum[i] / steps.size());
    return out;
}

// Trains at a mesh and checks the average against the run's own checkpoints, bit for bit.
std::vector<float> train_and_check(int np, const std::string& run, const std::string& args) {
    const auto r = test::run_train(np, args);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("model.avg.safetensors (the mean of the weights of steps 6,8,10)"),
              std::string::npos)
        << r.output;
    const std::vector<float> avg = read_weights(run + "/model.avg.safetensors");
    const std::vector<float> want = checkpoint_mean(run, {6, 8, 10});
    std::size_t differ = 0;
    for (std::size_t i = 0; i < avg.size(); ++i) differ += avg[i] != want[i];
    EXPECT_EQ(differ, 0u) << "of " << avg.size() << " weights differ from the checkpoints' mean";
    // The check can fail: the average is not the final weights, nor another window's mean.
    EXPECT_NE(avg, read_weights(run + "/model.safetensors"));
    EXPECT_NE(avg, checkpoint_mean(run, {8, 10}));
    return avg;
}

TEST(WeightAverage, OneProcessAverageIsTheMeanOfTheCheckpointsInModelSafetensorsFormat) {
    const std::string run = test::temp_dir("avg1") + "/run";
    train_and_check(1, run, average_flags(run, 4));
    const SafetensorsFile avg(run + "/model.avg.safetensors"), fin(run + "/model.safetensors");
    EXPECT_EQ(avg.metadata(), fin.metadata());
    EXPECT_EQ(avg.names(), fin.names());
    for (const auto& name : fin.names()) EXPECT_EQ(avg.entry(name).shape, fin.entry(name).shape);
}

TEST(WeightAverage, ZeroThreeAndTensorParallelAverageTheirShards) {
    const std::string dir = test::temp_dir("avgmesh");
    const auto one = train_and_check(1, dir + "/one", average_flags(dir + "/one", 4));
    for (const auto& [data, model, stage] :
         {std::tuple{2, 1, 3}, std::tuple{1, 2, 1}, std::tuple{2, 2, 2}}) {
        const std::string run = dir + "/d" + std::to_string(data) + "m" + std::to_string(model);
        SCOPED_TRACE(run);
        const auto avg = train_and_check(
            data * model, run, average_flags(run, 4 / data) + test::mesh_flags(data, model, stage));
        // The same training up to summation order: the same average up to rounding.
        double worst = 0;
        for (std::size_t i = 0; i < avg.size(); ++i)
            worst = std::max(worst, std::abs(double(avg[i]) - one[i]));
        EXPECT_LT(worst, 1e-5);
    }
}

// A run resumed from step 8 (window 4, 6, 8) writes the bytes of the uninterrupted run.
// `data` data-parallel ranks share the global batch of 4 rows.
void expect_resume_exact(int data, const std::string& dir, const std::string& mesh) {
    const int np = data;
    const std::string a = dir + "/a", b = dir + "/b", c = dir + "/c";
    auto r = test::run_train(np, average_flags(a, 4 / data) + mesh);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string resume = " --resume " + a + "/checkpoints/step_8 --config.log.dir=";
    r = test::run_train(np, resume + b);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(test::read_file(a + "/model.avg.safetensors"),
              test::read_file(b + "/model.avg.safetensors"));
    // Without its window the resumed run says so and averages step 10 alone.
    for (const auto& e : fs::directory_iterator(a + "/checkpoints/step_8"))
        if (e.path().filename().string().starts_with("average-")) fs::remove(e.path());
    r = test::run_train(np, resume + c);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("train.average starts a new window"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("the mean of the weights of steps 10)"), std::string::npos) << r.output;
    EXPECT_NE(test::read_file(a + "/model.avg.safetensors"),
              test::read_file(c + "/model.avg.safetensors"));
}

TEST(WeightAverage, ResumeWritesTheSameBytesOnOneProcess) {
    expect_resume_exact(1, test::temp_dir("avgres1"), "");
}

TEST(WeightAverage, ResumeWritesTheSameBytesAtZeroThree) {
    expect_resume_exact(2, test::temp_dir("avgres2"), test::mesh_flags(2, 1, 3));
}

// A window file with a flipped bit (its data, which its header does not describe) is caught
// by the CRC-32 saved with it: the resumed run says which file and starts a new window.
TEST(WeightAverage, ACorruptWindowFailsItsCrcAndStartsANewWindow) {
    const std::string dir = test::temp_dir("avgcrc"), a = dir + "/a", b = dir + "/b";
    auto r = test::run_train(1, average_flags(a, 4));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string window = a + "/checkpoints/step_8/average-d0-m0.safetensors";
    std::string bytes = test::read_file(window);
    ASSERT_GT(bytes.size(), 100u);
    bytes[bytes.size() - 5] ^= 0x10;  // inside the last snapshot's floats
    test::write_file(window, bytes);
    r = test::run_train(1, " --resume " + a + "/checkpoints/step_8 --config.log.dir=" + b);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("its averaging window " + window + " fails its CRC-32"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("train.average starts a new window"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("the mean of the weights of steps 10)"), std::string::npos) << r.output;
}

// A rollback (train.nan_policy) to the checkpoint of step 8 forgets the snapshot of step 10
// taken before it: the window at the end holds 6 and 8 from before, 10 and 12 from after.
TEST(WeightAverage, ARollbackForgetsTheSnapshotsAfterItsCheckpoint) {
    const std::string run = test::temp_dir("avgroll") + "/run";
    const auto r = test::run_train(
        1, test::tiny_flags(run, 12, 4, 1, 4) +
               " --config.train.average.every=2 --config.train.average.last=4"
               " --config.train.nan_policy=rollback --config.train.debug_inject_nan_step=11");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("rolled back to"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("(the mean of the weights of steps 6,8,10,12)"), std::string::npos)
        << r.output;
}

// A window that cannot be written stops the run (checkpoint.on_error=stop, naming the file) or
// is a warning (continue), the checkpoint itself being complete either way.
TEST(WeightAverage, AWindowWriteFailureFollowsCheckpointOnError) {
    const std::string dir = test::temp_dir("avgfail");
    const std::string fault = "MESHLM_FAULT_WRITE=ENOSPC:step_4/average-d0-m0";
    auto r = test::run_train(1, average_flags(dir + "/stop", 4), fault);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("writing the averaging window into " + dir +
                            "/stop/checkpoints/step_4 failed"),
              std::string::npos)
        << r.output;
    EXPECT_TRUE(fs::exists(dir + "/stop/checkpoints/step_4/trainer.json"));
    r = test::run_train(1, average_flags(dir + "/go", 4) + " --config.checkpoint.on_error=continue",
                        fault);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(
        r.output.find("(injected by MESHLM_FAULT_WRITE) (checkpoint.on_error=continue: training "
                      "goes on; a resume from " +
                      dir + "/go/checkpoints/step_4 starts a new averaging window)"),
        std::string::npos)
        << r.output;
    EXPECT_TRUE(fs::exists(dir + "/go/checkpoints/step_6/average-d0-m0.safetensors"));
}

TEST(WeightAverage, EvalScoresTheAverage) {
    const std::string dir = test::temp_dir("avgeval"), run = dir + "/run";
    const std::string text =
        " --config.data.synthetic=false --config.data.path=" + test::write_test_corpus(dir) +
        " --config.data.cache_dir=" + dir +
        "/cache --config.log.eval_interval=0 --config.train.eval_batches=2";
    auto r = test::run_train(1, average_flags(run, 4) + text);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string eval = std::string(MESHLM_BINARY) + " eval --checkpoint " + run;
    const auto fin = test::run_command(eval + " --weights final");
    const auto avg = test::run_command(eval + " --weights avg");
    ASSERT_EQ(fin.exit_code, 0) << fin.output;
    ASSERT_EQ(avg.exit_code, 0) << avg.output;
    EXPECT_NE(avg.output.find("split val:"), std::string::npos) << avg.output;
    EXPECT_NE(fin.output, avg.output);  // two models, two losses
    // A run without averaging, and a checkpoint, are refused by name.
    fs::remove(run + "/model.avg.safetensors");
    r = test::run_command(eval + " --weights avg");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("train.average.every > 0"), std::string::npos) << r.output;
    r = test::run_command(eval + "/checkpoints/step_10 --weights avg");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("is a checkpoint: give its run directory"), std::string::npos)
        << r.output;
}

TEST(WeightAverage, OptionsAreValidatedByName) {
    auto error = [](const std::vector<std::string>& overrides) {
        try {
            load_config("", overrides);
        } catch (const InvalidInput& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(error({"data.synthetic=true", "train.average.last=0"})
                  .find("train.average.last must be >= 1 (got 0)"),
              std::string::npos);
    EXPECT_NE(error({"data.synthetic=true", "train.average.every=-1"})
                  .find("train.average.every must be >= 0 (got -1)"),
              std::string::npos);
    const std::string yaml = test::temp_dir("avgcfg") + "/c.yaml";
    test::write_file(yaml, "data: {synthetic: true}\ntrain:\n  average: {every: 50, last: 4}\n");
    const Config c = load_config(yaml, {});
    EXPECT_EQ(c.train.average_every, 50);
    EXPECT_EQ(c.train.average_last, 4);
    EXPECT_NE(config_to_yaml(c).find("average.every: 50"), std::string::npos);
}

}  // namespace
}  // namespace meshlm

// A run directory belongs to one run: a second `train` into it is refused and leaves it byte for
// byte as it was; --force replaces it whole; a warm start never writes into its source; a
// copied run resumes into the copy; a finished run resumed changes nothing; a resume or warm
// start that changes the model is refused naming the keys; rotation deletes only the checkpoints
// of the run that wrote them.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>

#include "test_util.h"

namespace meshlm {
namespace {

namespace fs = std::filesystem;

std::string tiny_flags(const std::string& corpus, const std::string& cache) {
    return " --config.model.n_layer=2 --config.model.d_model=32 --config.model.n_head=2"
           " --config.model.max_seq_len=32 --config.train.seq_len=32 --config.train.batch_size=4"
           " --config.train.threads=2 --config.train.peak_gflops=100 --config.log.interval=1"
           " --config.log.eval_interval=0 --config.log.sample_tokens=8 --config.data.path=" +
           corpus + " --config.data.cache_dir=" + cache;
}

// Every file under dir (relative path -> bytes).
std::map<std::string, std::string> snapshot(const std::string& dir) {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file())
            out[fs::relative(e.path(), dir).string()] = test::read_file(e.path().string());
    return out;
}

std::vector<std::string> checkpoint_names(const std::string& run) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(run + "/checkpoints"))
        if (e.is_directory()) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

std::size_t line_count(const std::string& path) {
    const std::string text = test::read_file(path);
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

class RunDirSafety : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = test::temp_dir("rundir");
        flags_ = tiny_flags(test::write_test_corpus(dir_), dir_ + "/cache");
    }
    test::CommandResult train(const std::string& extra) {
        return test::run_command(test::meshlm_binary() + " train" + flags_ + " " + extra);
    }
    test::CommandResult resume(const std::string& extra) {
        return test::run_command(test::meshlm_binary() + " train --resume " + extra);
    }
    std::string dir_, flags_;
};

TEST_F(RunDirSafety, ASecondTrainIntoARunIsRefusedAndLeavesItByteIdentical) {
    const std::string a = dir_ + "/a";
    auto r = train("--config.train.steps=6 --config.checkpoint.interval=3 --config.log.dir=" + a);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto before = snapshot(a);
    // Another run (fewer steps, other seed) and the same one again: both refused.
    for (const std::string extra : {" --config.train.steps=2 --config.train.seed=9",
                                    " --config.train.steps=6 --config.checkpoint.interval=3"}) {
        r = train("--config.log.dir=" + a + extra);
        EXPECT_EQ(r.exit_code, 2) << r.output;
        for (const std::string& needle :
             {"the run directory " + a + " already holds a run", std::string("--resume"),
              std::string("checkpoint.resume=auto"), std::string("--config.log.dir="),
              std::string("--force")})
            EXPECT_NE(r.output.find(needle), std::string::npos) << needle << "\n" << r.output;
        EXPECT_EQ(r.output.find("resolved config"), std::string::npos) << "refused too late";
        EXPECT_TRUE(snapshot(a) == before) << "the run directory changed";
    }
}

TEST_F(RunDirSafety, ForceReplacesTheOldRunWhole) {
    const std::string a = dir_ + "/a";
    ASSERT_EQ(train("--config.train.steps=6 --config.checkpoint.interval=3 --config.log.dir=" + a)
                  .exit_code,
              0);
    test::write_file(a + "/notes.txt", "mine");  // not a run file: kept
    auto r = train(
        "--force --config.train.steps=2 --config.checkpoint.interval=1 "
        "--config.log.dir=" +
        a);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("--force: removing the run in " + a), std::string::npos) << r.output;
    EXPECT_EQ(checkpoint_names(a), (std::vector<std::string>{"step_1", "step_2"}));
    EXPECT_EQ(line_count(a + "/metrics.jsonl"), 2u);
    EXPECT_EQ(test::read_file(a + "/notes.txt"), "mine");
    // --force is for fresh runs only.
    r = resume(a + " --force");
    EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST_F(RunDirSafety, AWarmStartNeverWritesIntoItsSource) {
    const std::string a = dir_ + "/a";
    ASSERT_EQ(train("--config.train.steps=2 --config.log.dir=" + a).exit_code, 0);
    const auto before = snapshot(a);
    for (const std::string& target : {a, a + "/finetune"}) {
        auto r = train("--config.train.steps=1 --config.model.init_from=" + a +
                       " --config.log.dir=" + target);
        EXPECT_EQ(r.exit_code, 2) << r.output;
        EXPECT_TRUE(snapshot(a) == before) << target;
    }
    auto r = train("--config.train.steps=1 --config.model.init_from=" + a +
                   " --config.log.dir=" + dir_ + "/b");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(snapshot(a) == before);
}

TEST_F(RunDirSafety, ACopiedRunResumesIntoTheCopy) {
    const std::string a = dir_ + "/a", b = dir_ + "/b";
    ASSERT_EQ(train("--config.train.steps=4 --config.checkpoint.interval=2 --config.log.dir=" + a)
                  .exit_code,
              0);
    fs::copy(a, b, fs::copy_options::recursive);
    const auto before = snapshot(a);
    for (const std::string& path : {b, b + "/checkpoints/step_4"}) {
        auto r = resume(path + " --config.train.steps=" + (path == b ? "6" : "8"));
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_NE(r.output.find("run directory: " + b), std::string::npos) << r.output;
    }
    EXPECT_TRUE(snapshot(a) == before) << "the original changed";
    EXPECT_EQ(line_count(b + "/metrics.jsonl"), 8u);
    EXPECT_TRUE(fs::exists(b + "/checkpoints/step_8"));
}

TEST_F(RunDirSafety, AFinishedRunResumedChangesNothing) {
    const std::string a = dir_ + "/a";
    ASSERT_EQ(train("--config.train.steps=3 --config.log.dir=" + a).exit_code, 0);
    const auto before = snapshot(a);
    for (const std::string& how :
         {a, a + " --config.train.steps=2",
          std::string("--config.checkpoint.resume=auto --config.train.steps=3 --config.log.dir=") +
              a}) {
        auto r = how.starts_with("--") ? train(how) : resume(how);
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_NE(r.output.find("nothing left to train"), std::string::npos) << r.output;
        EXPECT_NE(r.output.find("train.steps"), std::string::npos) << r.output;
        EXPECT_EQ(r.output.find("sample:"), std::string::npos) << r.output;
        EXPECT_EQ(r.output.find("saved"), std::string::npos) << r.output;
        EXPECT_TRUE(snapshot(a) == before) << how;
    }
}

TEST_F(RunDirSafety, AResumeOrWarmStartThatChangesTheModelIsRefusedNamingTheKey) {
    const std::string a = dir_ + "/a";
    ASSERT_EQ(train("--config.train.steps=2 --config.log.dir=" + a).exit_code, 0);
    const auto before = snapshot(a);
    // n_layer: other shapes; n_head: the same shapes, another computation.
    for (const auto& [flag, key, was, now] : std::vector<std::array<std::string, 4>>{
             {"--config.model.n_layer=1", "model.n_layer", "2", "1"},
             {"--config.model.n_head=4", "model.n_head", "2", "4"},
             // muP's base width is stored with the run: another one would change its rates.
             {"--config.model.mup.d_base=64", "model.mup.d_base", "128", "64"}}) {
        auto r = resume(a + " --config.train.steps=4 " + flag);
        EXPECT_EQ(r.exit_code, 2) << r.output;
        EXPECT_NE(r.output.find(key + ": " + was + " in the checkpoint"), std::string::npos)
            << r.output;
        EXPECT_NE(r.output.find(", " + now + " here"), std::string::npos) << r.output;
        r = train("--config.train.steps=1 --config.model.init_from=" + a + " " + flag +
                  " --config.log.dir=" + dir_ + "/warm");
        EXPECT_EQ(r.exit_code, 2) << r.output;
        EXPECT_NE(r.output.find(key + ": " + was + " in model.init_from=" + a), std::string::npos)
            << r.output;
        EXPECT_FALSE(fs::exists(dir_ + "/warm"));
    }
    EXPECT_TRUE(snapshot(a) == before);
    // A bare weights file is held to its tensors: every one matched and consumed.
    auto r = train("--config.train.steps=1 --config.model.n_layer=1 --config.model.init_from=" + a +
                   "/model.safetensors --config.log.dir=" + dir_ + "/warm");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("this model config has no use for"), std::string::npos) << r.output;
}

TEST_F(RunDirSafety, RotationDeletesOnlyTheCheckpointsOfTheRunThatWroteThem) {
    const std::string a = dir_ + "/a";
    ASSERT_EQ(train("--config.train.steps=2 --config.checkpoint.interval=1 "
                    "--config.checkpoint.keep_last=2 --config.log.dir=" +
                    a)
                  .exit_code,
              0);
    // A checkpoint another run left here (say, before run directories were guarded).
    fs::copy(a + "/checkpoints/step_1", a + "/checkpoints/step_0", fs::copy_options::recursive);
    const std::string tj = a + "/checkpoints/step_0/trainer.json";
    test::write_file(
        tj, std::regex_replace(test::read_file(tj), std::regex("\"run_id\": \"[0-9a-f]+\""),
                               "\"run_id\": \"another-run\""));
    auto r = resume(a + " --config.train.steps=5");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(checkpoint_names(a), (std::vector<std::string>{"step_0", "step_4", "step_5"}));
}

}  // namespace
}  // namespace meshlm

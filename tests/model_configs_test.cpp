// The shipped family configs describe the models they name: `meshlm info` counts the parameters
// Hugging Face's transformers counts for the same configs (tools/reference/param_counts.py, on
// the meta device), and every small family config trains on the default corpus.
#include <gtest/gtest.h>

#include <string>

#include "test_util.h"

namespace meshlm {
namespace {

struct Expected {
    const char* config;
    const char* parameters;  // as `meshlm info` prints them
};

TEST(ModelConfigs, InfoCountsTheParametersTransformersCounts) {
    for (const Expected e :
         {Expected{"gpt-j-6b", "6050882784"}, Expected{"llama-3.2-1b", "1235814400"},
          Expected{"smollm-135m", "134515008"}, Expected{"gpt2-small", "124439808"}}) {
        auto r = test::run_command(test::meshlm_binary() + " info --config " + test::source_dir() +
                                   "/configs/" + e.config + ".yaml");
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_NE(r.output.find(std::string("parameters: ") + e.parameters + " "),
                  std::string::npos)
            << e.config << ":\n"
            << r.output;
    }
}

TEST(ModelConfigs, EveryFamilyConfigLoadsAndTrainsAStep) {
    for (const char* c : {"default", "tiny-gptj", "tiny-llama", "tiny-alibi", "tiny-vq", "alibi-xl",
                          "alibi-medium", "vq-enwik8"}) {
        auto r = test::run_command(test::meshlm_binary() + " info --config " + test::source_dir() +
                                   "/configs/" + c + ".yaml");
        EXPECT_EQ(r.exit_code, 0) << c << ":\n" << r.output;
    }
    const std::string dir = test::temp_dir("family_configs");
    for (const char* c : {"tiny-gptj", "tiny-llama", "tiny-alibi", "tiny-vq"}) {
        auto r = test::run_command(test::meshlm_binary() + " train --config " + test::source_dir() +
                                   "/configs/" + c +
                                   ".yaml --config.train.steps=2 --config.log.sample_tokens=8"
                                   " --config.log.dir=" +
                                   dir + "/" + c);
        EXPECT_EQ(r.exit_code, 0) << c << ":\n" << r.output;
        EXPECT_NE(r.output.find("sample:"), std::string::npos) << c << ":\n" << r.output;
    }
}

// model.vq.update_len plans activations for a chunk; training's evaluation and `meshlm eval`
// score the whole rows through the chunks (their equality with whole-row forwards is checked in
// vq_model_test): the CLI wiring, the same loss from both, and a row length that is not a
// multiple refused with the valid ones named.
TEST(ModelConfigs, VqUpdateLenPlansAChunkAndEvaluatesWholeRows) {
    const std::string config = " --config " + test::source_dir() + "/configs/tiny-vq.yaml" +
                               " --config.model.vq.update_len=32";
    auto info = test::run_command(test::meshlm_binary() + " info" + config);
    ASSERT_EQ(info.exit_code, 0) << info.output;
    EXPECT_NE(info.output.find("activations (B=16, T=32)"), std::string::npos) << info.output;

    const std::string dir = test::temp_dir("vq_update_len") + "/run";
    auto train = test::run_command(test::meshlm_binary() + " train" + config +
                                   " --config.train.steps=4 --config.log.eval_interval=4"
                                   " --config.train.final_eval_batches=0"
                                   // fp32 as `meshlm eval` scores (auto is bf16 on CPUs with
                                   // AVX512-BF16, 8e-4 away)
                                   " --config.train.precision=fp32"
                                   " --config.log.sample_tokens=0 --config.log.dir=" +
                                   dir);
    ASSERT_EQ(train.exit_code, 0) << train.output;
    const auto at = train.output.rfind("val_loss ");
    ASSERT_NE(at, std::string::npos) << train.output;
    const double logged = std::stod(train.output.substr(at + 9));

    auto eval = test::run_command(test::meshlm_binary() + " eval --checkpoint " + dir);
    ASSERT_EQ(eval.exit_code, 0) << eval.output;
    const auto l = eval.output.find("loss ");
    ASSERT_NE(l, std::string::npos) << eval.output;
    EXPECT_NEAR(std::stod(eval.output.substr(l + 5)), logged, 1e-4) << eval.output;

    auto bad =
        test::run_command(test::meshlm_binary() + " eval --checkpoint " + dir + " --seq-len 100");
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.output.find("multiple of it (96 or 128)"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace meshlm

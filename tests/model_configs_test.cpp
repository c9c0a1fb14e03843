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

}  // namespace
}  // namespace meshlm

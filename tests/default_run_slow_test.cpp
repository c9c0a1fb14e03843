// The headline run: `meshlm train` with no config (the built-in configs/default.yaml recipe on
// the fortunes corpus) keeps the former GPT-2 default's budget (2000 steps of 16 x 128 tokens, at
// most its 5.70M training FLOPs per token) and must end with a validation loss of at most
// kMaxValLoss nats per byte (bench/default_recipe.md). Slow (minutes): label `slow`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "test_util.h"

namespace meshlm {
namespace {

// Measured 1.5267 (2 threads, fp32, AMD EPYC; bench/default_recipe.md). The margin, 0.9 %,
// covers thread count, summation order and bf16 GEMMs (fp32 against bf16 differed by 0.04 % for
// the former default) and stays within issue 33's 1.55 nats/byte.
constexpr double kMeasured = 1.5267;
constexpr double kMaxValLoss = 1.54;
static_assert(kMaxValLoss <= 1.55 && kMaxValLoss > kMeasured);

TEST(DefaultRun, LearnsFortunesWithinTheFormerDefaultsBudget) {
    if (!std::filesystem::exists("/usr/share/games/fortunes"))
        GTEST_FAIL()
            << "the default corpus is missing: apt-get install fortunes (scripts/setup.sh)";
    std::string run = test::temp_dir("default") + "/run";
    // Only the run directory is redirected; everything else is the built-in default.
    auto r = test::run_command(test::meshlm_binary() + " train --config.log.dir=" + run);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::ifstream in(run + "/metrics.jsonl");
    std::string line, last_val;
    std::regex val_re("\"val_loss\": ([0-9.eE+-]+)");
    int lines = 0;
    for (std::smatch m; std::getline(in, line); ++lines)
        if (std::regex_search(line, m, val_re)) last_val = m[1];
    EXPECT_EQ(lines, 200) << "one line per 10 steps of 2000 (evaluations share the line)";
    ASSERT_FALSE(last_val.empty()) << r.output;
    EXPECT_LE(std::stod(last_val), kMaxValLoss) << r.output;
    std::smatch flops;
    const std::regex flops_re("([0-9.]+)M training FLOPs/token");
    ASSERT_TRUE(std::regex_search(r.output, flops, flops_re)) << r.output;
    EXPECT_LE(std::stod(flops[1]), 5.70) << "the former GPT-2 default's FLOPs per token";
    EXPECT_NE(r.output.find("ETA"), std::string::npos) << "progress with an ETA";
    EXPECT_NE(r.output.find("sample:"), std::string::npos);
    std::printf("final validation loss: %s nats/byte\n", last_val.c_str());
}

}  // namespace
}  // namespace meshlm

// The headline run: `meshlm train` with no config (the default model on the fortunes corpus)
// must end with a validation loss of at most 2.0 nats per byte. Slow (minutes): label `slow`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "test_util.h"

namespace meshlm {
namespace {

TEST(DefaultRun, LearnsFortunesToAtMostTwoNatsPerByte) {
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
    EXPECT_LE(std::stod(last_val), 2.0) << r.output;
    EXPECT_NE(r.output.find("sample:"), std::string::npos);
    std::printf("final validation loss: %s nats/byte\n", last_val.c_str());
}

}  // namespace
}  // namespace meshlm

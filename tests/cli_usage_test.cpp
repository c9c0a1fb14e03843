// The CLI answers like a good tool: a mistyped command gets a suggestion, exit codes are
// 0 / 1 / 2 as documented (CLI11's own codes never leak out), ranges in errors are readable,
// and `meshlm prepare` refuses to overwrite a non-empty output without --force, prints its
// progress once and warns about a split made from very few documents.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "test_util.h"

namespace meshlm {
namespace {

namespace fs = std::filesystem;

test::CommandResult meshlm(const std::string& args) {
    return test::run_command(test::meshlm_binary() + " " + args);
}

TEST(CliUsage, AMistypedCommandGetsASuggestion) {
    for (const auto& [typed, meant] : std::vector<std::pair<std::string, std::string>>{
             {"trian", "train"}, {"sampel", "sample"}, {"evl", "eval"}, {"reshrad", "reshard"}}) {
        const auto r = meshlm(typed);
        EXPECT_EQ(r.exit_code, 2) << r.output;
        EXPECT_NE(r.output.find("unknown command '" + typed + "'; did you mean '" + meant + "'?"),
                  std::string::npos)
            << r.output;
        EXPECT_EQ(r.output.find("A subcommand is required"), std::string::npos) << r.output;
    }
    const auto r = meshlm("frobnicate");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("unknown command 'frobnicate'"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("commands: train, sample"), std::string::npos) << r.output;
}

TEST(CliUsage, BadUsageExitsTwoHelpAndVersionExitZero) {
    // Each of these made CLI11 exit 105, 106 or 109.
    for (const std::string args :
         {"", "train --no-such-flag", "eval", "sample --checkpoint x --temperature abc",
          "sample --checkpoint x --num-samples 0", "train extra-positional"}) {
        const auto r = meshlm(args);
        EXPECT_EQ(r.exit_code, 2) << "meshlm " << args << "\n" << r.output;
    }
    for (const std::string args : {"--help", "train --help", "--version"})
        EXPECT_EQ(meshlm(args).exit_code, 0) << args;
}

TEST(CliUsage, RangesInErrorsAreReadable) {
    const auto r = meshlm("sample --checkpoint x --temperature -1");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--temperature: must be >= 0 (got -1)"), std::string::npos) << r.output;
    const auto longest = [](const std::string& s) {
        std::size_t best = 0, run = 0;
        for (char c : s) best = std::max(best, run = std::isdigit(c) ? run + 1 : 0);
        return best;
    };
    EXPECT_LT(longest(r.output), 10u) << r.output;
    const auto p = meshlm("sample --checkpoint x --top-p 2");
    EXPECT_NE(p.output.find("--top-p: must be in [0, 1] (got 2)"), std::string::npos) << p.output;
}

TEST(CliUsage, PrepareRefusesANonEmptyOutputWithoutForce) {
    const std::string dir = test::temp_dir("prepare"), corpus = test::write_test_corpus(dir);
    const std::string prepare =
        "prepare --input " + corpus + " --separator % --tokenizer byte --out " + dir + "/out";
    auto r = meshlm(prepare);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // One progress line, not the same line twice.
    const auto lines = std::count(r.output.begin(), r.output.end(), '\n');
    EXPECT_EQ(r.output.find("prepare:"), r.output.rfind("prepare:")) << lines << "\n" << r.output;
    const std::string meta = test::read_file(dir + "/out/meta.json");
    r = meshlm(prepare + " --seed 5");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--out " + dir + "/out is not empty; give --force"), std::string::npos)
        << r.output;
    EXPECT_EQ(test::read_file(dir + "/out/meta.json"), meta) << "overwritten";
    r = meshlm(prepare + " --seed 5 --force");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(test::read_file(dir + "/out/meta.json"), meta);
}

TEST(CliUsage, PrepareWarnsAboutASplitOfVeryFewDocuments) {
    const std::string dir = test::temp_dir("prepare"), corpus = test::write_test_corpus(dir);
    // Without --separator the file is one document per file: a corpus of two files is 2 docs.
    fs::copy_file(corpus, dir + "/second.txt");
    fs::copy_file(corpus, dir + "/third.txt");
    auto r = meshlm("prepare --input " + corpus + " --input " + dir + "/second.txt --input " + dir +
                    "/third.txt --tokenizer byte --out " + dir + "/out");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("warning: the val split is 1 of 3 documents"), std::string::npos)
        << r.output;
    r = meshlm("prepare --input " + corpus + " --separator % --tokenizer byte --out " + dir +
               "/out2");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace meshlm

// The CLI answers like a good tool: a mistyped command gets a suggestion, exit codes are
// 0 / 1 / 2 as documented (CLI11's own codes never leak out), ranges in errors are readable,
// and `meshlm prepare` refuses to overwrite a non-empty output without --force, prints its
// progress once and warns about a split made from very few documents.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>

#include "meshlm/kernels/device.h"
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

TEST(CliUsage, VersionSaysCommitCudaCpuFeaturesOnednnAndMpi) {
    const auto r = meshlm("--version");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("meshlm " MESHLM_VERSION "\n"), std::string::npos) << r.output;
    // The commit baked in at build time is this checkout's (or "unknown" outside git).
    const auto head = test::run_command("git -C " + test::source_dir() + " rev-parse HEAD");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.output, m, std::regex("\ncommit: ([0-9a-f]{12}|unknown)")))
        << r.output;
    if (head.exit_code == 0)
        EXPECT_EQ(head.output.substr(0, 12), m[1].str())
            << r.output << "(a binary built before the last commit? the build bakes it in)";
    EXPECT_TRUE(std::regex_search(r.output, std::regex("\nCUDA: (built in|not built)")))
        << r.output;
    EXPECT_TRUE(std::regex_search(r.output, std::regex("\nCPU features: [a-z0-9 ]*(avx|scalar)")))
        << r.output;
    EXPECT_TRUE(std::regex_search(r.output, std::regex("\nGEMM: oneDNN [0-9]+\\.[0-9]+\\.[0-9]+")))
        << r.output;
    EXPECT_TRUE(std::regex_search(r.output, std::regex("\nMPI: [A-Za-z].*[0-9]"))) << r.output;
}

// The OpenMP wait policy (core/omp_wait_policy.h): meshlm's short spin unless the user chose
// one, and libgomp itself runs with it (it reads the variable once, when it loads).
TEST(CliUsage, OpenMpSpinsBrieflyUnlessTheUserChoseAPolicy) {
    const std::string clean =
        "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u MESHLM_DEFAULT_WAIT_POLICY ";
    auto r = test::run_command(clean + "OMP_DISPLAY_ENV=VERBOSE " + MESHLM_BINARY + " --version");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("\nOpenMP wait: GOMP_SPINCOUNT=300 (meshlm's default)\n"),
              std::string::npos)
        << r.output;
    // libgomp prints its settings each time it loads: last in the image that ran main.
    const auto last = r.output.rfind("GOMP_SPINCOUNT = '");
    ASSERT_NE(last, std::string::npos) << r.output;
    EXPECT_EQ(r.output.substr(last, 23), "GOMP_SPINCOUNT = '300'\n") << r.output;

    r = test::run_command(clean + "OMP_WAIT_POLICY=PASSIVE " + MESHLM_BINARY + " --version");
    EXPECT_NE(r.output.find("\nOpenMP wait: OMP_WAIT_POLICY=PASSIVE (from the environment)"),
              std::string::npos)
        << r.output;
    r = test::run_command(clean + "GOMP_SPINCOUNT=7 OMP_DISPLAY_ENV=VERBOSE " + MESHLM_BINARY +
                          " --version");
    EXPECT_NE(r.output.find("\nOpenMP wait: GOMP_SPINCOUNT=7 (from the environment)"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("GOMP_SPINCOUNT = '300"), std::string::npos) << r.output;
}

TEST(CliUsage, EveryCommandChecksConfigOverrides) {
    const std::string dir = test::temp_dir("overrides");
    // Each command with what it needs to parse; the override is checked before anything is read.
    for (const std::string& cmd : std::vector<std::string>{
             "train", "sample --checkpoint " + dir, "eval --checkpoint " + dir,
             "serve --checkpoint " + dir, "prepare --input x --out " + dir + "/p",
             "convert --from meshlm --to hf " + dir + " " + dir + "/hf",
             "convert --from hf --to meshlm " + dir + " " + dir + "/m",
             "reshard --checkpoint " + dir + " --out " + dir + "/r",
             "tokenize --tokenizer byte </dev/null",
             "train-tokenizer --input x --vocab-size 300 --out " + dir + "/t.json", "info",
             "config --dump"}) {
        const auto r = meshlm(cmd + " --config.foo.bar=1");
        EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.output;
        EXPECT_NE(r.output.find("unknown config key 'foo.bar'"), std::string::npos) << cmd << "\n"
                                                                                    << r.output;
        const auto typo = meshlm(cmd + " --config.train.stpes=5");
        EXPECT_NE(typo.output.find("did you mean 'train.steps'?"), std::string::npos)
            << cmd << "\n"
            << typo.output;
    }
    // A valid key the command would not read is refused too, naming what it reads.
    const auto sample = meshlm("sample --checkpoint " + dir + " --config.train.steps=5");
    EXPECT_EQ(sample.exit_code, 2) << sample.output;
    EXPECT_NE(sample.output.find("meshlm sample does not read train.steps "
                                 "(--config.train.steps=5): it would change nothing; the keys "
                                 "it reads: data.tokenizer"),
              std::string::npos)
        << sample.output;
    const auto tokenize =
        meshlm("tokenize --tokenizer byte --config.data.tokenizer=byte </dev/null");
    EXPECT_EQ(tokenize.exit_code, 2) << tokenize.output;
    EXPECT_NE(tokenize.output.find("meshlm tokenize reads no config key"), std::string::npos)
        << tokenize.output;
    // prepare reads the data.* keys its flags set, and applies them: documents split at '%'.
    const std::string corpus = test::write_test_corpus(dir);
    const auto applied = meshlm("prepare --input " + corpus + " --out " + dir +
                                "/sep --config.data.separator=% --config.data.val_fraction=0.5");
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
    EXPECT_NE(applied.output.find("train: 150 documents"), std::string::npos) << applied.output;
    // Both ways at once is refused.
    const auto both = meshlm("prepare --input x --out " + dir +
                             "/p --tokenizer byte --config.data.tokenizer=byte");
    EXPECT_EQ(both.exit_code, 2) << both.output;
    EXPECT_NE(both.output.find("--tokenizer and --config.data.tokenizer set the same thing"),
              std::string::npos)
        << both.output;
}

TEST(CliUsage, ConfigListsEveryKeyAndDumpsAResolvedCommandLine) {
    const auto list = meshlm("config --list");
    ASSERT_EQ(list.exit_code, 0) << list.output;
    for (const char* part : {"[model]\n", "[optim]\n", "  model.n_layer ",
                             "int = ", "transformer blocks (L)", "  optim.lr ", "(> 0)"})
        EXPECT_NE(list.output.find(part), std::string::npos) << part;
    // docs/config.md is this output (config_reference_test compares the table itself).
    const auto md = meshlm("config --list --markdown");
    ASSERT_EQ(md.exit_code, 0) << md.output;
    EXPECT_EQ(md.output, test::read_file(test::source_dir() + "/docs/config.md"))
        << "regenerate with: build/meshlm config --list --markdown > docs/config.md";

    const std::string dir = test::temp_dir("dump");
    test::write_file(dir + "/x.yaml",
                     "train:\n  steps: 7\n  seq_len: 64\nmodel:\n  ln_eps: 1e-6\n");
    const auto dump = meshlm("config --dump --config " + dir + "/x.yaml --config.train.steps=5");
    ASSERT_EQ(dump.exit_code, 0) << dump.output;
    EXPECT_NE(dump.output.find("train:\n  steps: 5\n"), std::string::npos) << dump.output;
    EXPECT_NE(dump.output.find("  seq_len: 64\n"), std::string::npos) << dump.output;
    EXPECT_NE(dump.output.find("  norm_eps: 1e-06\n"), std::string::npos) << dump.output;
    EXPECT_EQ(dump.output.find("ln_eps"), std::string::npos) << dump.output;
    EXPECT_NE(dump.output.find("  dir: \"runs/x\"\n"), std::string::npos) << dump.output;
    const auto bad = meshlm("config --dump --config.train.steps=0");
    EXPECT_EQ(bad.exit_code, 2) << bad.output;
    EXPECT_NE(bad.output.find("train.steps must be >= 1 (got 0)"), std::string::npos) << bad.output;
    EXPECT_EQ(meshlm("config").exit_code, 2);
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

// Asking for the GPU where the model cannot run there is refused before anything is written,
// naming the key or flag and why (here: a CPU build names the CMake flag).
TEST(CliUsage, DeviceCudaIsRefusedByName) {
    const fs::path dir = fs::temp_directory_path() / "meshlm_device_cuda_run";
    fs::remove_all(dir);
    const auto r = meshlm(
        "train --config.train.device=cuda --config.train.steps=1 "
        "--config.log.dir=" +
        dir.string());
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("train.device cuda"), std::string::npos) << r.output;
    if (!kernels::cuda_built())
        EXPECT_NE(r.output.find("MESHLM_CUDA=ON"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir)) << "nothing written";
    for (const std::string cmd : {"sample", "eval", "serve"}) {
        const auto s = meshlm(cmd + " --checkpoint " + dir.string() + " --device cuda");
        EXPECT_NE(s.exit_code, 0) << cmd << "\n" << s.output;
        EXPECT_NE(s.output.find("--device cuda"), std::string::npos) << cmd << "\n" << s.output;
    }
    EXPECT_EQ(meshlm("sample --checkpoint x --device tpu").exit_code, 2);
    const auto bad = meshlm("train --config.train.device=tpu");
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.output.find("train.device"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace meshlm

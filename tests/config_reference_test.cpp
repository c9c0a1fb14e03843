// The config reference and the resolved run config: docs/config.md is exactly what
// `meshlm config --list --markdown` prints from the option table; the list has every key with
// its type, default, range and help by section; a prepared data.path's meta.json supplies
// data.tokenizer and model.vocab_size unless they are set (a smaller vocabulary, or another
// tokenizer, is an error naming both); input paths are stored absolute; schedule surprises are said
// in one line each.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "meshlm/cli/config.h"
#include "meshlm/cli/config_reference.h"
#include "meshlm/cli/run_config.h"
#include "meshlm/cli/schedule_notes.h"
#include "meshlm/core/error.h"
#include "meshlm/data/prepare.h"
#include "meshlm/data/tokenizer.h"
#include "test_util.h"

namespace meshlm {
namespace {

namespace fs = std::filesystem;

TEST(ConfigReference, DocsConfigMdIsTheGeneratedReference) {
    const std::string docs = test::read_file(test::source_dir() + "/docs/config.md");
    ASSERT_FALSE(docs.empty()) << "docs/config.md is missing";
    EXPECT_EQ(docs, config_reference_markdown())
        << "docs/config.md differs from the option table (src/meshlm/cli/config.cpp); "
           "regenerate it with: build/meshlm config --list --markdown > docs/config.md";
}

TEST(ConfigReference, EveryKeyHasItsTypeDefaultRangeAndHelpUnderItsSection) {
    const std::string text = config_reference_text(), md = config_reference_markdown();
    std::size_t last_section = 0;
    std::string section;
    for (const OptionInfo& o : config_options()) {
        if (!o.current.empty()) {  // an older name: listed once, with its current name
            EXPECT_NE(text.find(o.key + " (now " + o.current + ")"), std::string::npos) << o.key;
            continue;
        }
        if (o.section != section) {
            section = o.section;
            const std::size_t at = text.find("[" + section + "]\n");
            ASSERT_NE(at, std::string::npos) << section;
            EXPECT_GE(at, last_section) << section << " out of order";
            last_section = at;
            EXPECT_NE(md.find("\n## " + section + "\n"), std::string::npos) << section;
        }
        const std::size_t at = text.find("  " + o.key + " ");
        ASSERT_NE(at, std::string::npos) << o.key;
        EXPECT_GT(at, last_section) << o.key << " is not under [" << section << "]";
        const std::string row = text.substr(at, text.find('\n', text.find('\n', at) + 1) - at);
        EXPECT_NE(row.find(o.type + " = " + o.default_value), std::string::npos) << row;
        if (!o.constraint.empty())
            EXPECT_NE(row.find("(" + o.constraint + ")"), std::string::npos) << row;
        EXPECT_FALSE(o.help.empty()) << o.key;
        EXPECT_NE(row.find(o.help), std::string::npos) << row;
        EXPECT_NE(md.find("| `" + o.key.substr(section.size() + 1) + "` | " + o.type + " | "),
                  std::string::npos)
            << o.key;
    }
}

class RunConfig : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = test::temp_dir("run_config");
        test::write_test_corpus(dir_);
        tokenizer_ = test::fixture("tokenizers/bpe_trained.json");
        auto tok = make_tokenizer(tokenizer_);
        PrepareOptions opt;
        opt.progress = false;
        opt.tokenizer_spec = tokenizer_;
        opt.read.separator = "%";
        prepare_corpus({dir_ + "/corpus.txt"}, opt, *tok, dir_ + "/prepared");
    }
    std::string dir_, tokenizer_;
};

TEST_F(RunConfig, MetaJsonSuppliesTheTokenizerAndVocabularyUnlessSet) {
    const Config c = resolve_run_config("", {"data.path=" + dir_ + "/prepared"});
    EXPECT_EQ(c.data.tokenizer, tokenizer_);
    EXPECT_EQ(c.model.vocab_size, 400);
    // Set explicitly: a larger (padded) vocabulary is kept, a smaller one names both values.
    EXPECT_EQ(resolve_run_config("", {"data.path=" + dir_ + "/prepared", "model.vocab_size=512"})
                  .model.vocab_size,
              512);
    try {
        resolve_run_config("", {"data.path=" + dir_ + "/prepared", "model.vocab_size=300"});
        ADD_FAILURE() << "a vocabulary smaller than the data's was accepted";
    } catch (const InvalidInput& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("model.vocab_size is 300 but the data in " + dir_ +
                           "/prepared has a vocabulary of 400"),
                  std::string::npos)
            << msg;
    }
    // Raw inputs have no meta.json: the defaults stand.
    const Config raw = resolve_run_config("", {"data.path=" + dir_ + "/corpus.txt"});
    EXPECT_EQ(raw.data.tokenizer, "byte");
    EXPECT_EQ(raw.model.vocab_size, ModelConfig{}.vocab_size);
}

TEST_F(RunConfig, TrainTakesThePreparedTokenizerAndRefusesAnotherNamingBoth) {
    const std::string data = " --config.data.path=" + dir_ + "/prepared";
    auto r = test::run_command(test::meshlm_binary() + " config --dump" + data);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("  tokenizer: \"" + tokenizer_ + "\"\n"), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("  vocab_size: 400\n"), std::string::npos) << r.output;
    r = test::run_command(test::meshlm_binary() + " train" + data +
                          " --config.data.tokenizer=byte --config.log.dir=" + dir_ + "/run");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("was prepared with tokenizer '" + tokenizer_ + "'"), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("the model is configured with 'byte'"), std::string::npos) << r.output;
}

TEST_F(RunConfig, InputPathsAreStoredAbsolute) {
    const std::string cwd = fs::current_path().string();
    ASSERT_EQ(::chdir(dir_.c_str()), 0);
    Config c;
    try {
        c = resolve_run_config("", {"data.path=./corpus.txt", "data.cache_dir=cache",
                                    "model.init_from=runs/a/../b", "log.dir=runs/x"});
    } catch (...) {
        ASSERT_EQ(::chdir(cwd.c_str()), 0);
        throw;
    }
    ASSERT_EQ(::chdir(cwd.c_str()), 0);
    const std::string here = fs::canonical(dir_).string();
    EXPECT_EQ(fs::canonical(fs::path(c.data.path).parent_path()).string(), here);
    EXPECT_TRUE(fs::path(c.data.path).is_absolute()) << c.data.path;
    EXPECT_EQ(fs::path(c.data.path).filename(), "corpus.txt");
    EXPECT_TRUE(fs::path(c.data.cache_dir).is_absolute()) << c.data.cache_dir;
    EXPECT_TRUE(c.model.init_from.ends_with("/runs/b")) << c.model.init_from;
    EXPECT_TRUE(fs::path(c.model.init_from).is_absolute()) << c.model.init_from;
    EXPECT_EQ(c.log.dir, "runs/x");  // a run is found by the path a command is given
    EXPECT_EQ(resolve_run_config("", {}).data.tokenizer, "byte");
}

TEST(ScheduleNotes, AChangedScheduleAndALongWarmupAreSaidInOneLineEach) {
    Config saved = load_config("", {"train.steps=100", "optim.warmup_steps=10"});
    Config now = saved;
    EXPECT_EQ(schedule_notes(&saved, now), "");
    EXPECT_EQ(schedule_notes(nullptr, now), "");
    now.train.steps = 200;
    const std::string changed = schedule_notes(&saved, now);
    EXPECT_EQ(changed,
              "note: train.steps is 200, 100 when the checkpoint was written: the learning-rate "
              "schedule now ends at step 200 (keep the old one with "
              "--config.optim.decay_steps=100)\n");
    now.optim.decay_steps = 100;  // the schedule no longer follows train.steps
    EXPECT_EQ(schedule_notes(&saved, now), "");
    now.optim.warmup_steps = 300;
    EXPECT_EQ(schedule_notes(nullptr, now),
              "note: optim.warmup_steps (300) exceeds train.steps (200): the run ends inside the "
              "warmup and never reaches optim.lr\n");
}

}  // namespace
}  // namespace meshlm

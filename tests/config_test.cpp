// Config layer: defaults < file < overrides, error messages, YAML round trip, argv splitting.
#include "meshlm/cli/config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "meshlm/core/error.h"
#include "test_util.h"

namespace meshlm {
namespace {

// EXPECT_CONTAINS(text, part): gtest only (HasSubstr would need gmock linked).
::testing::AssertionResult contains(const char* text_expr, const char* part_expr,
                                    const std::string& text, const std::string& part) {
    if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << text_expr << " does not contain " << part_expr
                                         << "\n  text: " << text << "\n  part: " << part;
}
#define EXPECT_CONTAINS(text, part) EXPECT_PRED_FORMAT2(contains, text, part)

std::string write_file(const std::string& name, const std::string& text) {
    static const std::string dir = test::temp_dir("config");
    const std::string path = dir + "/" + name;
    std::ofstream(path) << text;
    return path;
}

// The message of the InvalidInput that `fn` throws; a test failure when it throws nothing.
std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const InvalidInput& e) {
        return e.what();
    }
    ADD_FAILURE() << "expected meshlm::InvalidInput";
    return "";
}

std::string load_error(const std::string& path, const std::vector<std::string>& overrides = {}) {
    return error_of([&] { load_config(path, overrides); });
}

std::string override_error(const std::vector<std::string>& overrides) {
    return load_error("", overrides);
}

TEST(Config, DefaultsWhenNoFile) {
    const Config c = load_config("", {});
    EXPECT_EQ(c.name, "default");
    EXPECT_EQ(c.model.n_layer, ModelConfig{}.n_layer);
    EXPECT_EQ(c.model.d_model, ModelConfig{}.d_model);
    EXPECT_EQ(c.optim.lr, OptimConfig{}.lr);
    EXPECT_EQ(c.optim.schedule, "cosine");
    EXPECT_EQ(c.data.path, DataConfig{}.path);
    EXPECT_EQ(c.train.seed, TrainConfig{}.seed);
    EXPECT_EQ(c.log.dir, "");  // resolved to runs/<name> by the trainer, not here
    EXPECT_EQ(config_to_yaml(c), config_to_yaml(Config{}));
}

TEST(Config, FileOverridesDefaults) {
    const auto path = write_file("tiny.yaml",
                                 "# a tiny model\n"
                                 "model:\n"
                                 "  n_layer: 2\n"
                                 "  d_model: 64\n"
                                 "optim:\n"
                                 "  lr: 1e-3\n"
                                 "  schedule: linear\n"
                                 "data:\n"
                                 "  synthetic: true\n"
                                 "train:\n"
                                 "  seed: 18446744073709551615\n"
                                 "log:\n"
                                 "  sample_prompt: \"Q: why?\"\n"
                                 "parallel: {}\n"
                                 "checkpoint:\n");
    const Config c = load_config(path, {});
    EXPECT_EQ(c.name, "tiny");
    EXPECT_EQ(c.model.n_layer, 2);
    EXPECT_EQ(c.model.d_model, 64);
    EXPECT_EQ(c.model.n_head, ModelConfig{}.n_head);  // untouched keys keep their defaults
    EXPECT_EQ(c.optim.lr, 1e-3f);
    EXPECT_EQ(c.optim.schedule, "linear");
    EXPECT_EQ(c.optim.end_lr, OptimConfig{}.end_lr);
    EXPECT_TRUE(c.data.synthetic);
    EXPECT_EQ(c.train.seed, 18446744073709551615ull);
    EXPECT_EQ(c.log.sample_prompt, "Q: why?");
}

TEST(Config, EmptyFileGivesDefaults) {
    const Config c = load_config(write_file("empty.yaml", ""), {});
    EXPECT_EQ(c.name, "empty");
    EXPECT_EQ(config_to_yaml(c), config_to_yaml(Config{}));
    const Config commented = load_config(write_file("comment.yaml", "# nothing\nmodel:\n"), {});
    EXPECT_EQ(config_to_yaml(commented), config_to_yaml(Config{}));
}

TEST(Config, OverridesBeatFile) {
    const auto path = write_file("base.yaml", "model:\n  n_layer: 2\noptim:\n  lr: 0.01\n");
    const Config c = load_config(path, {"model.n_layer=6", "data.synthetic=true"});
    EXPECT_EQ(c.model.n_layer, 6);
    EXPECT_EQ(c.optim.lr, 0.01f);  // from the file, not overridden
    EXPECT_TRUE(c.data.synthetic);
}

TEST(Config, LaterOverrideWins) {
    const Config c = load_config("", {"optim.lr=0.1", "optim.lr=1e-4", "optim.schedule=constant"});
    EXPECT_EQ(c.optim.lr, 1e-4f);
    EXPECT_EQ(c.optim.schedule, "constant");
}

TEST(Config, OverrideStringValues) {
    const Config c = load_config("", {"log.sample_prompt=Hello, world: #1",
                                      "log.dir=", "data.separator='%%'", "data.path=[not yaml"});
    EXPECT_EQ(c.log.sample_prompt, "Hello, world: #1");
    EXPECT_EQ(c.log.dir, "");
    EXPECT_EQ(c.data.separator, "%%");
    EXPECT_EQ(c.data.path, "[not yaml");
}

TEST(Config, UnknownKeyInFileSuggestsClosest) {
    const auto path = write_file("typo.yaml", "model:\n  n_layer: 2\n  n_layers: 3\n");
    const auto msg = load_error(path);
    EXPECT_CONTAINS(msg, "unknown config key 'model.n_layers'; did you mean 'model.n_layer'?");
    EXPECT_CONTAINS(msg, path + ":3:");  // file and line of the bad key
}

TEST(Config, UnknownKeyInOverrideSuggestsClosest) {
    auto msg = override_error({"optim.learning_rat=0.1"});
    EXPECT_CONTAINS(msg, "unknown config key 'optim.learning_rat'");
    msg = override_error({"optim.betta1=0.8"});
    EXPECT_CONTAINS(msg, "did you mean 'optim.beta1'?");
    EXPECT_CONTAINS(msg, "optim.betta1=0.8");  // names the override
    // The right key in the wrong section.
    EXPECT_CONTAINS(override_error({"model.lr=0.1"}), "did you mean 'optim.lr'?");
}

TEST(Config, UnknownSection) {
    auto msg = load_error(write_file("sec.yaml", "optimizer:\n  lr: 0.1\n"));
    EXPECT_CONTAINS(msg, "unknown config key 'optimizer.lr'");
    EXPECT_CONTAINS(msg, "did you mean 'optim.lr'?");
    msg = load_error(write_file("sec2.yaml", "modle: 3\n"));
    EXPECT_CONTAINS(msg, "unknown config section 'modle'; did you mean 'model'?");
    EXPECT_CONTAINS(load_error(write_file("sec3.yaml", "stuff:\n")),
                    "unknown config section 'stuff'");
    EXPECT_CONTAINS(override_error({"foo.n_layer=2"}), "did you mean 'model.n_layer'?");
    // Nothing close: no random suggestion; a known section lists its keys instead.
    msg = override_error({"foo.bar=1"});
    EXPECT_CONTAINS(msg, "there is no section 'foo'");
    EXPECT_EQ(msg.find("did you mean"), std::string::npos) << msg;
    EXPECT_CONTAINS(override_error({"model.something_else=1"}),
                    "keys in 'model': n_layer, d_model, n_head");
    msg = load_error(write_file("par.yaml", "parallel:\n  dp: 2\n"));
    EXPECT_CONTAINS(msg, "unknown config key 'parallel.dp'");
}

TEST(Config, ParallelSection) {
    // The default model's 4 heads do not split over 3 model ranks; its vocabulary of 257 is
    // padded, so 2 model ranks are fine.
    EXPECT_CONTAINS(override_error({"parallel.model=3"}),
                    "model.n_head (4) must be divisible by parallel.model (3)");
    EXPECT_EQ(load_config("", {"parallel.model=2"}).parallel.model, 2);
    EXPECT_CONTAINS(override_error({"parallel.model=4", "model.n_kv_head=2"}),
                    "must be divisible by parallel.model (4)");
    EXPECT_CONTAINS(override_error({"parallel.zero_stage=4"}), "parallel.zero_stage");
    EXPECT_CONTAINS(override_error({"parallel.data=0"}), "parallel.data");
}

TEST(Config, WrongTypes) {
    EXPECT_CONTAINS(override_error({"model.n_layer=abc"}),
                    "model.n_layer: expected an integer, got 'abc'");
    EXPECT_CONTAINS(override_error({"model.n_layer=3.5"}),
                    "model.n_layer: expected an integer, got '3.5'");
    EXPECT_CONTAINS(override_error({"model.n_layer=1e3"}), "expected an integer");
    EXPECT_CONTAINS(override_error({"model.n_layer=99999999999"}), "out of range");
    EXPECT_CONTAINS(override_error({"data.synthetic=maybe"}),
                    "data.synthetic: expected a boolean (true or false), got 'maybe'");
    EXPECT_CONTAINS(override_error({"data.synthetic=yes"}), "expected a boolean");
    EXPECT_CONTAINS(override_error({"optim.lr=abc"}), "optim.lr: expected a number, got 'abc'");
    EXPECT_CONTAINS(override_error({"optim.lr=nan"}), "expected a finite number");
    EXPECT_CONTAINS(override_error({"train.seed=-1"}), "expected a non-negative integer");
    EXPECT_CONTAINS(override_error({"model.n_layer="}), "got an empty value");

    const auto path = write_file("types.yaml", "model:\n  n_layer: abc\n  d_model: [1, 2]\n");
    const auto msg = load_error(path);
    EXPECT_CONTAINS(msg, path + ":2:");
    EXPECT_CONTAINS(msg, "model.n_layer: expected an integer, got 'abc'");
    EXPECT_CONTAINS(msg, "model.d_model: expected an integer, got a sequence");
}

TEST(Config, TypesAccepted) {
    const Config c = load_config("", {"model.n_layer=+3", "optim.lr=.5", "optim.eps=1e-10",
                                      "train.peak_gflops=2", "data.synthetic=True"});
    EXPECT_EQ(c.model.n_layer, 3);
    EXPECT_EQ(c.optim.lr, 0.5f);
    EXPECT_EQ(c.optim.eps, 1e-10f);
    EXPECT_EQ(c.train.peak_gflops, 2.0);
    EXPECT_TRUE(c.data.synthetic);
}

TEST(Config, RangeErrors) {
    EXPECT_CONTAINS(override_error({"optim.lr=-0.1"}), "optim.lr must be > 0 (got -0.1)");
    const auto heads = override_error({"model.n_head=6"});
    EXPECT_CONTAINS(heads, "model.n_head (6) must divide model.d_model (128)");
    EXPECT_CONTAINS(heads, "1, 2, 4, 8, 16, 32, 64, 128");
    EXPECT_CONTAINS(override_error({"train.seq_len=256"}),
                    "train.seq_len (256) must be <= model.max_seq_len (128)");
    EXPECT_CONTAINS(override_error({"model.vocab_size=100"}),
                    "model.vocab_size (100) must be >= 257");
    EXPECT_CONTAINS(
        override_error({"optim.schedule=step"}),
        "optim.schedule must be one of cosine, linear, inverse_sqrt, constant (got 'step')");
    EXPECT_CONTAINS(override_error({"optim.decay_mask=some"}), "matrices, all, none");
    EXPECT_CONTAINS(override_error({"optim.name=sgd"}),
                    "optim.name must be one of adamw, lion, adafactor (got 'sgd')");
    EXPECT_CONTAINS(override_error({"optim.adafactor_decay_rate=0"}),
                    "optim.adafactor_decay_rate must be > 0 (got 0)");
    EXPECT_CONTAINS(override_error({"optim.adafactor_min_dim_size_to_factor=0"}),
                    "optim.adafactor_min_dim_size_to_factor must be >= 1 (got 0)");
    EXPECT_CONTAINS(override_error({"optim.adafactor_clipping_threshold=-1"}),
                    "optim.adafactor_clipping_threshold must be >= 0 (got -1)");
    EXPECT_CONTAINS(override_error({"optim.adafactor_eps=0"}), "optim.adafactor_eps must be > 0");
    EXPECT_CONTAINS(override_error({"optim.clip_mode=global"}), "one of norm, value");
    EXPECT_CONTAINS(override_error({"optim.wd_mode=decoupled"}), "one of coupled, independent");
    EXPECT_CONTAINS(override_error({"optim.warmup_start=1"}), "optim.warmup_start");
    EXPECT_CONTAINS(override_error({"optim.decay_steps=-5"}), "optim.decay_steps");
    EXPECT_CONTAINS(override_error({"optim.decay_steps=20", "optim.warmup_steps=20"}),
                    "optim.decay_steps (20) must be 0 (= train.steps) or past "
                    "optim.warmup_steps (20)");
    EXPECT_CONTAINS(override_error({"data.packing=stream"}), "one of concat, pad");
    EXPECT_CONTAINS(override_error({"train.seq_warmup_steps=10", "train.seq_warmup_len=48"}),
                    "train.seq_warmup_len (48) must divide train.seq_len (128)");
    // The head counts a width allows, found by pairs up to sqrt: a prime width of 2^31 - 1 is
    // answered at once (the fuzzer's slow input took seconds).
    EXPECT_CONTAINS(override_error({"model.d_model=36", "model.n_head=5"}),
                    "valid head counts: 1, 2, 3, 4, 6, 9, 12, 18, 36");
    EXPECT_CONTAINS(override_error({"model.d_model=2147483647", "model.n_head=5"}),
                    "valid head counts: 1, 2147483647");
    EXPECT_CONTAINS(override_error({"data.val_fraction=0.5", "data.test_fraction=0.5"}),
                    "must be < 1");
    EXPECT_CONTAINS(override_error({"data.val_fraction=1"}), "in (0, 1)");
    EXPECT_CONTAINS(override_error({"optim.beta2=1"}), "optim.beta2 must be in [0, 1)");
    EXPECT_CONTAINS(override_error({"train.steps=0"}), "train.steps must be >= 1 (got 0)");
    EXPECT_CONTAINS(override_error({"log.interval=0"}), "log.interval must be >= 1");
    EXPECT_CONTAINS(override_error({"train.threads=-1"}), "train.threads must be >= 0");
    // Range errors point at the file line that set the value.
    const auto path = write_file("range.yaml", "optim:\n  lr: -0.1\n");
    EXPECT_CONTAINS(load_error(path), path + ":2:3: optim.lr must be > 0 (got -0.1)");
    // Boundaries that are valid.
    EXPECT_NO_THROW(load_config("", {"optim.beta1=0", "optim.end_lr=0", "log.eval_interval=0",
                                     "train.seq_len=128", "model.n_head=128"}));
}

TEST(Config, OnlyTheResolvedValueIsChecked) {
    // A bad value in the file that an override replaces is fine.
    const auto path = write_file("fixed.yaml", "optim:\n  lr: -1\n");
    EXPECT_EQ(load_config(path, {"optim.lr=0.5"}).optim.lr, 0.5f);
    // Cross-field rules look at the final values.
    const Config c = load_config("", {"train.seq_len=512", "model.max_seq_len=512"});
    EXPECT_EQ(c.train.seq_len, 512);
}

TEST(Config, SeveralProblemsReportedTogether) {
    const auto msg = override_error({"optim.lr=-1", "model.n_layers=2", "data.synthetic=2"});
    EXPECT_CONTAINS(msg, "3 problems");
    EXPECT_CONTAINS(msg, "model.n_layers");
    EXPECT_CONTAINS(msg, "data.synthetic");
    EXPECT_CONTAINS(msg, "optim.lr must be > 0");
}

TEST(Config, MalformedYamlReportsLine) {
    const auto path = write_file("bad.yaml", "model:\n  n_layer: 2\n  d_model: [1, 2\n");
    const auto msg = load_error(path);
    EXPECT_CONTAINS(msg, path + ":4:1: malformed YAML");
    const auto dup = load_error(write_file("dup.yaml", "model:\n  n_layer: 2\n  n_layer: 3\n"));
    EXPECT_CONTAINS(dup, "duplicate key 'model.n_layer' (first set on line 2)");
}

TEST(Config, FileAndShapeErrors) {
    EXPECT_CONTAINS(load_error("/nonexistent/x.yaml"),
                    "config file '/nonexistent/x.yaml' not found");
    EXPECT_CONTAINS(load_error(write_file("list.yaml", "- a\n- b\n")),
                    "the top level must be a mapping of sections");
    EXPECT_CONTAINS(load_error(test::temp_dir("config_dir")), "is a directory");
    EXPECT_CONTAINS(load_error(write_file("two.yaml", "model: {}\n---\ndata: {}\n")),
                    "holds 2 YAML documents");
    EXPECT_CONTAINS(load_error(write_file("scalar.yaml", "model: 3\n")),
                    "section 'model' must be a mapping");
    EXPECT_CONTAINS(override_error({"model.n_layer"}), "must look like section.key=value");
}

TEST(Config, RoundTripThroughYaml) {
    const Config c = load_config(
        "", {"model.n_layer=3", "model.d_model=96", "model.n_head=3", "model.ln_eps=1e-6",
             "model.init_std=0.1", "optim.lr=0.0007", "optim.end_lr=0.3", "optim.eps=1.5e-9",
             "optim.beta2=0.999", "train.peak_gflops=123.456789012345", "train.seed=42",
             "data.synthetic=true", "data.val_fraction=0.3333333",
             "log.sample_prompt=\"quote \\\" backslash \\\\ newline \\n # ~ é\"",
             "data.separator=~", "log.dir=true"});
    EXPECT_EQ(c.log.sample_prompt, "quote \" backslash \\ newline \n # ~ é");
    EXPECT_EQ(c.log.dir, "true");
    const std::string yaml = config_to_yaml(c);
    for (const auto& section : {"model:", "data:", "train:", "optim:", "log:"})
        EXPECT_CONTAINS(yaml, section);
    const Config back = load_config(write_file("roundtrip.yaml", yaml), {});
    EXPECT_EQ(config_to_yaml(back), yaml);
    EXPECT_EQ(back.optim.lr, c.optim.lr);
    EXPECT_EQ(back.optim.eps, c.optim.eps);
    EXPECT_EQ(back.data.val_fraction, c.data.val_fraction);
    EXPECT_EQ(back.train.peak_gflops, c.train.peak_gflops);
    EXPECT_EQ(back.log.sample_prompt, c.log.sample_prompt);
    EXPECT_EQ(back.data.separator, "~");
    EXPECT_EQ(back.log.dir, "true");
    // Defaults round-trip too, and floats are written readably.
    const std::string defaults = config_to_yaml(Config{});
    EXPECT_EQ(config_to_yaml(load_config(write_file("defaults.yaml", defaults), {})), defaults);
    EXPECT_CONTAINS(defaults, "  lr: 0.003\n");
    EXPECT_CONTAINS(defaults, "  adafactor_eps: 1e-30\n");
}

TEST(Config, KeysComeFromTheTable) {
    const auto keys = config_keys();
    ASSERT_FALSE(keys.empty());
    EXPECT_EQ(keys.front(), "model.n_layer");
    EXPECT_EQ(std::set<std::string>(keys.begin(), keys.end()).size(), keys.size());
    const std::string yaml = config_to_yaml(Config{});
    const std::string help = config_help();
    for (const auto& key : keys) {
        const auto dot = key.find('.');
        EXPECT_CONTAINS(yaml, "  " + key.substr(dot + 1) + ": ") << key;
        EXPECT_CONTAINS(help, key) << key;
    }
    for (const auto& key : {"model.n_head", "data.tokenizer", "train.seq_len", "optim.lr",
                            "optim.decay_mask", "log.eval_interval"})
        EXPECT_NE(std::find(keys.begin(), keys.end(), key), keys.end()) << key;
}

TEST(Config, OlderNamesAreReadNeverWrittenAndTwoValuesAreRefused) {
    // model.ln_eps is the older name of model.norm_eps.
    const Config c = load_config(write_file("old.yaml", "model:\n  ln_eps: 1e-6\n"), {});
    EXPECT_FLOAT_EQ(c.model.norm_eps, 1e-6f);
    const std::string yaml = config_to_yaml(c);
    EXPECT_CONTAINS(yaml, "  norm_eps: 1e-06\n");
    EXPECT_EQ(yaml.find("ln_eps"), std::string::npos) << yaml;
    EXPECT_FLOAT_EQ(load_config("", {"model.ln_eps=1e-7"}).model.norm_eps, 1e-7f);

    // Both names with different values: refused, naming both (in a file and in overrides).
    const std::string both =
        load_error(write_file("both.yaml", "model:\n  norm_eps: 1e-5\n  ln_eps: 1e-6\n"));
    EXPECT_CONTAINS(both, "model.ln_eps and model.norm_eps are two names of one key");
    EXPECT_CONTAINS(both, "both.yaml:3:");
    EXPECT_CONTAINS(override_error({"model.norm_eps=1e-5", "model.ln_eps=1e-6"}),
                    "model.ln_eps and model.norm_eps are two names of one key");
    // The same value under both names (configs saved before the older name was dropped) loads.
    EXPECT_FLOAT_EQ(
        load_config(write_file("same.yaml", "model:\n  norm_eps: 1e-6\n  ln_eps: 1e-6\n"), {})
            .model.norm_eps,
        1e-6f);
    // An override under the current name replaces the file's older name.
    EXPECT_FLOAT_EQ(
        load_config(write_file("old2.yaml", "model:\n  ln_eps: 1e-6\n"), {"model.norm_eps=2e-6"})
            .model.norm_eps,
        2e-6f);
    const auto keys = config_keys();
    EXPECT_EQ(std::find(keys.begin(), keys.end(), "model.ln_eps"), keys.end());
}

TEST(Config, OverridesAreCheckedWithoutLoadingAConfig) {
    EXPECT_CONTAINS(error_of([] { check_config_overrides({"model.n_layr=3"}); }),
                    "unknown config key 'model.n_layr'; did you mean 'model.n_layer'?");
    EXPECT_CONTAINS(error_of([] { check_config_overrides({"foo.bar=1"}); }),
                    "there is no section 'foo'");
    EXPECT_CONTAINS(error_of([] { check_config_overrides({"train.steps=many"}); }),
                    "train.steps: expected an integer, got 'many'");
    // Ranges and cross-key rules are the reading command's business.
    EXPECT_NO_THROW(check_config_overrides({"train.steps=0", "data.tokenizer=x.json"}));
}

TEST(Config, SplitConfigOverrides) {
    // clang-format off
    const char* argv[] = {"meshlm", "train", "--config", "path.yaml",
                          "--config.optim.lr=1e-3",
                          "--config.model.n_layer", "2",
                          "--steps", "5",
                          "--config.data.split_seed", "-7",  // negative value as the next arg
                          "--", "--config.x.y=1"};           // after "--": left alone
    // clang-format on
    const auto split = split_config_overrides(static_cast<int>(std::size(argv)), argv);
    EXPECT_EQ(split.args, (std::vector<std::string>{"meshlm", "train", "--config", "path.yaml",
                                                    "--steps", "5", "--", "--config.x.y=1"}));
    EXPECT_EQ(split.overrides,
              (std::vector<std::string>{"optim.lr=1e-3", "model.n_layer=2", "data.split_seed=-7"}));

    const char* missing[] = {"meshlm", "--config.model.n_layer"};
    EXPECT_CONTAINS(error_of([&] { split_config_overrides(2, missing); }), "needs a value");
    const char* flag_next[] = {"meshlm", "--config.model.n_layer", "--steps", "5"};
    EXPECT_CONTAINS(error_of([&] { split_config_overrides(4, flag_next); }), "needs a value");

    const auto back = load_config("", split.overrides);
    EXPECT_EQ(back.model.n_layer, 2);
    EXPECT_EQ(back.data.split_seed, -7);
}

}  // namespace
}  // namespace meshlm

namespace meshlm {
namespace {

// Resume and warm start compare every key of the model section, whatever keys it gains: each
// model key (but init_std and init_from) changed on its own is reported, alone, with both values.
TEST(Config, ModelChangesCoverEveryModelKey) {
    const Config base = load_config("", {});
    // The defaults as YAML text, key -> value.
    std::map<std::string, std::string> value;
    std::string section;
    std::istringstream yaml(config_to_yaml(base));
    for (std::string line; std::getline(yaml, line);) {
        if (line.empty()) continue;
        if (line[0] != ' ') {
            section = line.substr(0, line.size() - 1);
            continue;
        }
        const auto colon = line.find(':');
        value[section + "." + line.substr(2, colon - 2)] = line.substr(colon + 2);
    }
    int checked = 0;
    for (const auto& key : config_keys()) {
        if (!key.starts_with("model.")) continue;
        const std::string& v = value.at(key);
        // Another valid value: a number doubled, a boolean flipped (string keys: when one of a
        // few common alternatives is valid).
        std::vector<std::string> candidates;
        if (v == "true" || v == "false") {
            candidates = {v == "true" ? "false" : "true"};
        } else if (!v.empty() && v[0] != '"' && !std::isalpha(static_cast<unsigned char>(v[0]))) {
            std::ostringstream twice, next;
            twice << std::setprecision(17) << std::stod(v) * 2;
            next << std::stod(v) + 1;  // 0 doubled is 0 (model.n_kv_head, model.d_ff)
            candidates = {twice.str(), next.str()};
        } else {
            // Another name for the string keys (architecture choices), or a path.
            candidates = {"parallel", "rmsnorm", "rope",   "interleaved",
                          "linear",   "swiglu",  "fan_in", "x.safetensors"};
        }
        for (const auto& c : candidates) {
            if (c == v) continue;
            Config changed;
            try {
                changed = load_config("", {key + "=" + c});
            } catch (const InvalidInput&) {
                continue;
            }
            const auto diff = model_changes(base, changed);
            if (key == "model.init_std" || key == "model.init_from" || key == "model.init" ||
                key.starts_with("model.dropout_") || key == "model.z_loss") {
                EXPECT_TRUE(diff.empty()) << key << " does not change what the weights compute";
            } else {
                ASSERT_EQ(diff.size(), 1u) << key;
                EXPECT_EQ(diff[0].key, key);
                EXPECT_EQ(diff[0].before, v);
                EXPECT_NE(diff[0].after, v);
            }
            ++checked;
            break;
        }
    }
    EXPECT_GE(checked, 30) << "every model key of today's table has a valid changed value";
    EXPECT_TRUE(model_changes(base, base).empty());
}

}  // namespace
}  // namespace meshlm

namespace meshlm {
namespace {

// model.attn_act: its values are checked by name, and it has no dropout of probabilities.
TEST(Config, AttentionNonlinearityIsCheckedAgainstDropout) {
    const std::string bad = override_error({"model.attn_act=relu"});
    EXPECT_NE(bad.find("model.attn_act"), std::string::npos) << bad;
    EXPECT_NE(bad.find("norm_sqrelu"), std::string::npos) << bad;  // the valid values
    const std::string msg = override_error({"model.attn_act=norm_elu", "model.dropout_attn=0.1"});
    EXPECT_NE(msg.find("model.dropout_attn (0.1) needs model.attn_act softmax"), std::string::npos)
        << msg;
}

}  // namespace
}  // namespace meshlm

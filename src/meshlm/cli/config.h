// The run configuration: one struct filled by defaults < YAML file < "section.key=value"
// overrides, validated, and dumpable back to YAML.
//
// Every option is declared once, in the option table (config_table.h: a file per section) (key,
// field, help, constraint); parsing, dumping, the key list and the help text all come from that
// table.
// Sections: model, data, train, optim, log, parallel, checkpoint.
//
// exports: Config, load_config, config_to_yaml, split_config_overrides, SplitArgs,
//          config_keys, config_options, check_config_overrides, config_help
#pragma once

#include <string>
#include <vector>

#include "meshlm/data/data_config.h"
#include "meshlm/io/checkpoint_config.h"
#include "meshlm/model/model_config.h"
#include "meshlm/optim/optim_config.h"
#include "meshlm/parallel/parallel_config.h"
#include "meshlm/train/train_config.h"

namespace meshlm {

struct Config {
    std::string name = "default";  // config name: the YAML file's stem, or "default"
    ModelConfig model;
    DataConfig data;
    TrainConfig train;
    OptimConfig optim;
    LogConfig log;
    ParallelConfig parallel;
    CheckpointConfig checkpoint;
};

// Defaults < YAML file at `path` (skipped when empty; kDefaultRecipe: the built-in recipe) <
// `overrides` ("section.key=value", applied in order, each value read as a YAML scalar). Validates
// every field and the cross-field rules; throws meshlm::InvalidInput whose message names the key,
// the file position or override, and what would be valid (several problems are reported together,
// one per line). `keys_given`, when not null, receives the keys the file or the overrides set
// (current names, any order).
Config load_config(const std::string& path, const std::vector<std::string>& overrides,
                   std::vector<std::string>* keys_given = nullptr);

// configs/default.yaml, built into the binary: the default run's recipe, which `meshlm train`,
// `meshlm info` and `meshlm config --dump` use when no --config file is given. As a path to
// load_config or resolve_run_config, kDefaultRecipe names it: it is read like a file, but its keys
// do not count as given (a prepared data.path's meta.json still supplies the tokenizer and
// vocabulary) and the config's name is "default".
const std::string& default_recipe_yaml();
inline constexpr const char* kDefaultRecipe = "<built-in configs/default.yaml>";
// `path`, or kDefaultRecipe when it is empty.
inline std::string config_path_or_default(const std::string& path) {
    return path.empty() ? std::string(kDefaultRecipe) : path;
}

// The resolved config as YAML: sections model, data, train, optim, log with every key. Loading
// this text back with load_config gives an identical Config (floats are written exactly).
std::string config_to_yaml(const Config& c);

// Command line split: every "--config.section.key=value" or "--config.section.key value" is taken
// out of argv and returned as "section.key=value" in `overrides`; everything else (argv[0]
// included, and `--config path.yaml` itself) stays in `args`, in order, for CLI11. Arguments after
// a bare "--" are left alone. Throws InvalidInput for an override with no value.
struct SplitArgs {
    std::vector<std::string> args;
    std::vector<std::string> overrides;
};
SplitArgs split_config_overrides(int argc, const char* const* argv);

// A model key whose value differs between two configs (values as YAML text).
struct ModelKeyChange {
    std::string key, before, after;
};
// Every key of the table's model section whose value differs from `before` to `after`, except
// those that do not change what the model computes from given weights (model.init_std,
// model.init_from). Keys added to the model section are compared without further work.
std::vector<ModelKeyChange> model_changes(const Config& before, const Config& after);

// A few lines with the settings a reader looks for first (model, data, schedule, run
// directory), with the values actually used; the whole config is in RUN_DIR/config.yaml.
std::string config_summary(const Config& c);

// Every dotted key a saved config holds ("model.n_layer", ...), in table order; older names
// (model.ln_eps) are read but not among them.
std::vector<std::string> config_keys();

// One row of the option table as text, in table order (grouped by section): for
// `meshlm config --list` and docs/config.md. `current` is set for an older name only: the key it
// stands for (read, never written; both names with different values in one config are refused).
struct OptionInfo {
    std::string section, key, type, default_value, constraint, help, current;
};
std::vector<OptionInfo> config_options();

// Throws InvalidInput for an override ("section.key=value") whose key is not in the table (named,
// with the closest valid key) or whose value is not of the key's type; ranges are not checked.
// For commands that take overrides without loading a config from them.
void check_config_overrides(const std::vector<std::string>& overrides);

// One line per key: key, type, default, constraint and help; for --help and docs.
std::string config_help();

}  // namespace meshlm

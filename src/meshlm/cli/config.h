// The run configuration: one struct filled by defaults < YAML file < "section.key=value"
// overrides, validated, and dumpable back to YAML.
//
// Every option is declared once, in the table in config.cpp (build_table) (key, field, help,
// constraint); parsing, dumping, the key list and the help text all come from that table.
// Sections: model, data, train, optim, log, parallel, checkpoint.
//
// exports: Config, load_config, config_to_yaml, split_config_overrides, SplitArgs,
//          config_keys, config_help
#pragma once

#include <string>
#include <vector>

#include "meshlm/data/data_config.h"
#include "meshlm/model/model_config.h"
#include "meshlm/optim/optim_config.h"
#include "meshlm/parallel/parallel_config.h"
#include "meshlm/train/checkpoint_config.h"
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

// Defaults < YAML file at `path` (skipped when empty) < `overrides` ("section.key=value", applied
// in order, each value read as a YAML scalar). Validates every field and the cross-field rules;
// throws meshlm::InvalidInput whose message names the key, the file position or override, and
// what would be valid (several problems are reported together, one per line).
Config load_config(const std::string& path, const std::vector<std::string>& overrides);

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

// Every valid dotted key ("model.n_layer", ...), in table order.
std::vector<std::string> config_keys();

// One line per key: key, type, default, constraint and help; for --help and docs.
std::string config_help();

}  // namespace meshlm

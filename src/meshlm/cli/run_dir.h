// A run directory written by `meshlm train` (or one of its checkpoints), opened for sample /
// eval / convert: its resolved config, its tokenizer (the copy saved in the run directory when
// the tokenizer is a file) and its weights.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "meshlm/cli/config.h"
#include "meshlm/core/buffer.h"
#include "meshlm/core/param_layout.h"
#include "meshlm/data/tokenizer.h"

namespace meshlm {

struct RunDir {
    std::string path;
    Config config;
    std::string tokenizer_spec;  // "byte" or the tokenizer file to use
    std::unique_ptr<Tokenizer> tokenizer;
};

// Throws InvalidInput naming what is missing when `path` is not a run directory. `overrides`
// ("section.key=value") apply to the run's saved config; one that changes what the weights
// compute (a model key, config.h model_changes) is refused, naming both values. An overridden
// data.tokenizer replaces the run's copy of its tokenizer.
RunDir open_run_dir(const std::string& path, const std::vector<std::string>& overrides = {});
// Reads the weights into params, laid out by `layout` (transformer_layout of the run's model): a
// checkpoint's (single-file or sharded) or the run's final model.safetensors.
void load_run_weights(const RunDir& run, const ParamLayout& layout, float* params);
// Where a run's chat template (tokenizer_config.json) and generation_config.json may be, in
// order: the run (or checkpoint) directory, a checkpoint's run directory, the directory of the
// tokenizer file.
std::vector<std::string> chat_config_dirs(const RunDir& run);

}  // namespace meshlm

#include "meshlm/cli/run_dir.h"

#include <filesystem>

#include "meshlm/core/error.h"
#include "meshlm/io/weights.h"
#include "meshlm/train/trainer.h"

namespace fs = std::filesystem;

namespace meshlm {

RunDir open_run_dir(const std::string& path) {
    const std::string config_path = path + "/config.yaml";
    if (!fs::exists(config_path) || !fs::exists(path + "/model.safetensors"))
        MESHLM_INVALID("--checkpoint ", path,
                       " is not a run directory: it needs config.yaml and model.safetensors "
                       "(written by `meshlm train`)");
    RunDir run;
    run.path = path;
    run.config = load_config(config_path, {});
    run.tokenizer_spec = run.config.data.tokenizer;
    if (run.tokenizer_spec != "byte") {
        std::string copy = run_tokenizer_copy(path, run.tokenizer_spec);
        if (fs::exists(copy)) run.tokenizer_spec = copy;
    }
    run.tokenizer = make_tokenizer(run.tokenizer_spec);
    return run;
}

void load_run_weights(const RunDir& run, const ParamLayout& layout, float* params) {
    load_weights(run.path + "/model.safetensors", layout, params);
}

}  // namespace meshlm

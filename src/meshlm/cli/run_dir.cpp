#include "meshlm/cli/run_dir.h"

#include <filesystem>

#include "meshlm/cli/model_match.h"
#include "meshlm/cli/overrides.h"
#include "meshlm/core/error.h"
#include "meshlm/io/checkpoint.h"
#include "meshlm/io/run_files.h"
#include "meshlm/io/safetensors_set.h"
#include "meshlm/io/weights.h"
#include "meshlm/kernels/ops/run_device.h"
#include "meshlm/model/transformer.h"

namespace fs = std::filesystem;

namespace meshlm {

RunDir open_run_dir(const std::string& path, const std::vector<std::string>& overrides) {
    RunDir run;
    std::string tokenizer_home = path;  // where the tokenizer copy lives
    if (is_checkpoint_dir(path)) {
        read_checkpoint(path);  // verifies sizes and checksums before use
        run.path = path;
        tokenizer_home = checkpoint_run_dir(path);
    } else if (fs::exists(path + "/config.yaml") && SafetensorsSet::present(path)) {
        run.path = path;
    } else if (fs::is_directory(path) && latest_checkpoint(path)) {
        // A run that has not finished (or was interrupted): its latest checkpoint.
        run.path = *latest_checkpoint(path);
        read_checkpoint(run.path);
    } else {
        MESHLM_INVALID(path,
                       " is not a run or checkpoint directory: it needs config.yaml and "
                       "model.safetensors (written by `meshlm train` or `meshlm convert`), or "
                       "checkpoints/latest");
    }
    run.config = load_config(run.path + "/config.yaml", overrides);
    if (!overrides.empty())
        require_same_model(load_config(run.path + "/config.yaml", {}), run.config,
                           "the weights in " + run.path);
    run.tokenizer_spec = run.config.data.tokenizer;
    if (run.tokenizer_spec != "byte" && !overridden(overrides, "data.tokenizer")) {
        std::string copy = run_tokenizer_copy(tokenizer_home, run.tokenizer_spec);
        if (fs::exists(copy)) run.tokenizer_spec = copy;
    }
    run.tokenizer = make_tokenizer(run.tokenizer_spec);
    if (run.tokenizer->vocab_size() > run.config.model.vocab_size)  // an overridden tokenizer
        MESHLM_INVALID("data.tokenizer '", run.tokenizer_spec, "' has ",
                       run.tokenizer->vocab_size(), " tokens but the model in ", run.path,
                       " has model.vocab_size ", run.config.model.vocab_size,
                       ": give the tokenizer it was trained with");
    return run;
}

void load_run_weights(const RunDir& run, const ParamLayout& layout, float* params) {
    // A checkpoint of either format (single-file or sharded), else the run's final weights.
    if (is_checkpoint_dir(run.path))
        load_checkpoint_model(run.path, run.config.model, params);
    else
        load_weights(run.path, layout, params);
}

std::vector<std::string> chat_config_dirs(const RunDir& run) {
    std::vector<std::string> dirs = {run.path};
    if (is_checkpoint_dir(run.path)) dirs.push_back(checkpoint_run_dir(run.path));
    if (run.tokenizer_spec != "byte") {
        const fs::path parent = fs::path(run.tokenizer_spec).parent_path();
        dirs.push_back(parent.empty() ? "." : parent.string());
    }
    return dirs;
}

Device run_device(const RunDir& run, const std::string& name) {
    const std::string gap = decode_device_gap(for_inference(run.config.model), Device::cuda);
    return kernels::resolve_run_device(name, "--device", gap);
}

}  // namespace meshlm

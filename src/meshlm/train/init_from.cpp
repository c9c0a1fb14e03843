#include "meshlm/train/init_from.h"

#include <filesystem>

#include "meshlm/core/error.h"
#include "meshlm/io/hf_model.h"
#include "meshlm/io/safetensors_set.h"
#include "meshlm/io/weights.h"
#include "meshlm/train/checkpoint.h"

namespace fs = std::filesystem;

namespace meshlm {

std::string load_init_weights(const std::string& path, const ModelConfig& model,
                              const ParamLayout& layout, float* params) {
    if (fs::is_regular_file(path) && path.ends_with(".safetensors")) {
        load_weights(path, layout, params);
        return path;
    }
    if (!fs::is_directory(path))
        MESHLM_INVALID("model.init_from: ", path,
                       " does not exist (give a meshlm run or checkpoint directory, a "
                       ".safetensors file or a Hugging Face model directory)");
    if (fs::exists(path + "/config.json")) {
        const HfModelConfig hf = read_hf_config(path);
        const ModelConfig& m = hf.model;
        if (!m.same_shapes(model))
            MESHLM_INVALID("model.init_from: the Hugging Face model in ", path, " has n_layer ",
                           m.n_layer, ", d_model ", m.d_model, ", n_head ", m.n_head,
                           ", vocab_size ", m.vocab_size, ", max_seq_len ", m.max_seq_len,
                           "; set the model section to these values (now n_layer ", model.n_layer,
                           ", d_model ", model.d_model, ", n_head ", model.n_head, ", vocab_size ",
                           model.vocab_size, ", max_seq_len ", model.max_seq_len,
                           "), and its architecture keys as `meshlm convert --from hf --to meshlm` "
                           "writes them");
        // Shapes alone are not enough: weights run through another norm, position scheme or
        // activation than they were trained with compute something else.
        const std::vector<std::string> diff = hf_architecture_mismatch(hf.model, model);
        if (!diff.empty()) {
            std::string lines;
            for (const auto& d : diff) lines += "\n  " + d;
            MESHLM_INVALID("model.init_from: the model section does not describe the ",
                           hf.architecture, " in ", path,
                           "; set these model.* keys to its values "
                           "(`meshlm convert --from hf --to meshlm` writes them all):",
                           lines);
        }
        read_hf_weights(path, hf, layout, params);
        return path + " (Hugging Face " + hf.family + ")";
    }
    if (SafetensorsSet::present(path) && !fs::exists(path + "/trainer.json")) {
        load_weights(path, layout, params);
        return path;
    }
    const std::string dir = resolve_checkpoint(path);
    read_checkpoint(dir);  // verifies sizes and checksums first
    load_checkpoint_model(dir, model, params);
    return dir;
}

}  // namespace meshlm

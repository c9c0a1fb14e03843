#include "meshlm/train/init_from.h"

#include <filesystem>

#include "meshlm/core/error.h"
#include "meshlm/io/weights.h"
#include "meshlm/train/checkpoint.h"

namespace fs = std::filesystem;

namespace meshlm {

std::string load_init_weights(const std::string& path, const ParamLayout& layout, float* params) {
    if (fs::is_regular_file(path) && path.ends_with(".safetensors")) {
        load_weights(path, layout, params);
        return path;
    }
    if (!fs::is_directory(path))
        MESHLM_INVALID("model.init_from: ", path,
                       " does not exist (give a meshlm run or checkpoint directory, or a "
                       ".safetensors file)");
    if (fs::exists(path + "/model.safetensors") && !fs::exists(path + "/trainer.json")) {
        load_weights(path + "/model.safetensors", layout, params);
        return path + "/model.safetensors";
    }
    const std::string dir = resolve_checkpoint(path);
    read_checkpoint(dir);  // verifies sizes and checksums first
    load_checkpoint_model(dir, layout, params);
    return dir;
}

}  // namespace meshlm

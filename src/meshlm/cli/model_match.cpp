#include "meshlm/cli/model_match.h"

#include <filesystem>

#include "meshlm/core/error.h"
#include "meshlm/io/hf_gpt2.h"
#include "meshlm/train/checkpoint.h"

namespace fs = std::filesystem;

namespace meshlm {

void require_same_model(const Config& source, const Config& wanted, const std::string& what) {
    const auto changes = model_changes(source, wanted);
    if (changes.empty()) return;
    std::string list;
    for (const auto& c : changes)
        list += "\n  " + c.key + ": " + c.before + " in " + what + ", " + c.after + " here";
    MESHLM_INVALID(what, " was trained with another model (these keys change what the model ",
                   "computes, so its weights would not mean the same):", list,
                   "\nkeep the model section as it was (drop those overrides), or train a new "
                   "run");
}

std::optional<Config> init_from_config(const std::string& path) {
    if (!fs::is_directory(path)) return std::nullopt;
    if (fs::exists(path + "/config.json")) {
        Config c;
        c.model = read_hf_gpt2_config(path).model;
        return c;
    }
    if (fs::exists(path + "/config.yaml")) return load_config(path + "/config.yaml", {});
    return load_config(resolve_checkpoint(path) + "/config.yaml", {});
}

}  // namespace meshlm

#include "meshlm/cli/model_match.h"

#include <filesystem>

#include "meshlm/core/error.h"
#include "meshlm/io/checkpoint.h"
#include "meshlm/io/hf_model.h"
#include "meshlm/model/transformer_layout.h"

namespace fs = std::filesystem;

namespace meshlm {

namespace {

// What the change does to the tensors: the first one whose shape differs, or is missing.
std::string tensor_consequence(const ModelConfig& source, const ModelConfig& wanted) {
    const ParamLayout have = transformer_layout(source), need = transformer_layout(wanted);
    for (const auto& s : need.slices()) {
        const ParamSlice* h = have.find(s.name);
        if (!h) return "\n  (the weights have no tensor '" + s.name + "' that this config needs)";
        if (!(h->shape == s.shape))
            return "\n  (tensor '" + s.name + "' has shape " + h->shape.str() +
                   " there but this config needs " + s.shape.str() + ")";
    }
    if (have.slices().size() != need.slices().size())
        return "\n  (the weights hold " + std::to_string(have.slices().size()) +
               " tensors, this config uses " + std::to_string(need.slices().size()) + ")";
    return "\n  (the tensors have the same shapes, but the model would compute something else)";
}

}  // namespace

void require_same_model(const Config& source, const Config& wanted, const std::string& what) {
    const auto changes = model_changes(source, wanted);
    if (changes.empty()) return;
    std::string list;
    for (const auto& c : changes)
        list += "\n  " + c.key + ": " + c.before + " in " + what + ", " + c.after + " here";
    list += tensor_consequence(source.model, wanted.model);
    MESHLM_INVALID(what, " was trained with another model (these keys change what the model ",
                   "computes, so its weights would not mean the same):", list,
                   "\nkeep the model section as it was (drop those overrides), or train a new "
                   "run");
}

void require_same_optimizer(const Config& source, const Config& wanted, const std::string& what) {
    const OptimConfig &a = source.optim, &b = wanted.optim;
    if (a.name != b.name)
        MESHLM_INVALID(what, " holds ", a.name, "'s optimizer state; optim.name=", b.name,
                       " cannot continue it: keep optim.name=", a.name,
                       ", or start a new run from its weights with model.init_from");
    // Which of Adafactor's tensors keep factored statistics is part of its state's layout.
    if (a.name == "adafactor" &&
        (a.adafactor_factored != b.adafactor_factored ||
         a.adafactor_min_dim_size_to_factor != b.adafactor_min_dim_size_to_factor))
        MESHLM_INVALID(
            what, " holds Adafactor state factored with optim.adafactor_factored=",
            a.adafactor_factored ? "true" : "false",
            " and optim.adafactor_min_dim_size_to_factor=", a.adafactor_min_dim_size_to_factor,
            "; this run asks for other factoring and cannot continue it: keep those "
            "two keys, or start a new run from its weights with model.init_from");
}

std::optional<Config> init_from_config(const std::string& path) {
    if (!fs::is_directory(path)) return std::nullopt;
    if (fs::exists(path + "/config.json")) {
        Config c;
        c.model = read_hf_config(path).model;
        return c;
    }
    if (fs::exists(path + "/config.yaml")) return load_config(path + "/config.yaml", {});
    return load_config(resolve_checkpoint(path) + "/config.yaml", {});
}

}  // namespace meshlm

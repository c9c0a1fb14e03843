// Config loading, validation and dumping (config.h), all driven by one option table
// (config_table.h; the framework in config_option.h, the loader in config_loader.h).
//
// Flow of load_config: defaults (the structs' initializers) < YAML file < overrides. Each value
// is handed to its option as a RawValue (scalar text or "was a sequence/map/null"), parsed with
// strict scalar rules (integers reject "3.5", floats reject "abc", bools are true/false), and the
// key's origin is remembered so that range errors found after resolution can point at the file
// line or the override that set the value. All problems are collected and thrown together.
#include "meshlm/cli/config.h"

#include <algorithm>
#include <filesystem>
#include <string_view>

#include "meshlm/cli/config_loader.h"
#include "meshlm/cli/config_table.h"
#include "meshlm/core/error.h"

namespace meshlm {

using config_detail::Loader;
using config_detail::option_table;
using config_detail::OptionTable;

Config load_config(const std::string& path, const std::vector<std::string>& overrides,
                   std::vector<std::string>* keys_given) {
    Loader loader(option_table());
    const bool recipe = path == kDefaultRecipe;
    if (recipe)
        loader.load_default_recipe();
    else if (!path.empty())
        loader.load_file(path);
    for (const auto& o : overrides) loader.apply_override(o);
    loader.validate();
    if (keys_given) *keys_given = loader.keys_given();
    return loader.take(path.empty() || recipe ? "default"
                                              : std::filesystem::path(path).stem().string());
}

std::string config_to_yaml(const Config& c) {
    const OptionTable& table = option_table();
    std::string out;
    for (const auto& section : table.sections) {
        std::string body;
        for (const auto& o : table.options)
            if (o.section == section && o.current.empty())
                body += "  " + o.key.substr(section.size() + 1) + ": " + o.dump(c) + "\n";
        if (body.empty()) continue;  // reserved sections
        if (!out.empty()) out += "\n";
        out += section + ":\n" + body;
    }
    return out;
}

SplitArgs split_config_overrides(int argc, const char* const* argv) {
    static constexpr std::string_view prefix = "--config.";
    SplitArgs out;
    bool passthrough = false;  // after a bare "--" everything is positional
    for (int i = 0; i < argc; ++i) {
        const std::string arg = argv[i] ? argv[i] : "";
        if (i == 0 || passthrough || !arg.starts_with(prefix)) {
            if (i > 0 && arg == "--") passthrough = true;
            out.args.push_back(arg);
            continue;
        }
        const std::string rest = arg.substr(prefix.size());
        const auto eq = rest.find('=');
        if (rest.empty() || eq == 0)
            MESHLM_INVALID("config override '", arg,
                           "' names no key; use --config.section.key=VALUE");
        if (eq != std::string::npos) {
            out.overrides.push_back(rest);
            continue;
        }
        const bool has_value =
            i + 1 < argc && argv[i + 1] && !std::string_view(argv[i + 1]).starts_with("--");
        if (!has_value)
            MESHLM_INVALID("config override '", arg, "' needs a value: use ", arg, "=VALUE or ",
                           arg, " VALUE");
        out.overrides.push_back(rest + "=" + argv[++i]);
    }
    return out;
}

std::vector<ModelKeyChange> model_changes(const Config& before, const Config& after) {
    // Keys that only matter before the first step (how fresh weights are drawn, where warm-start
    // weights come from) or only to training's regularization (dropout, z-loss: fine-tuning may
    // change them): the function the weights compute does not depend on them.
    static const std::vector<std::string> not_computation = {
        "model.init_std",     "model.init_from",     "model.init",      "model.dropout_embd",
        "model.dropout_attn", "model.dropout_resid", "model.z_loss",    "model.init_from_layers",
        "model.mup.u_init",   "model.mup.q_init",    "model.mup.r_init"};
    std::vector<ModelKeyChange> out;
    for (const auto& o : option_table().options) {
        if (o.section != "model" || !o.current.empty() ||
            std::find(not_computation.begin(), not_computation.end(), o.key) !=
                not_computation.end())
            continue;
        const std::string a = o.dump(before), b = o.dump(after);
        if (a != b) out.push_back({o.key, a, b});
    }
    return out;
}

std::string config_summary(const Config& c) {
    const OptionTable& table = option_table();
    auto v = [&](const char* key) { return table.find(key)->dump(c); };
    // The shape always; the architecture keys where they differ from the defaults (GPT-2's).
    static const Config defaults;
    std::string model;
    for (const auto& o : table.options) {
        if (o.section != "model" || o.key == "model.init_from" || !o.current.empty()) continue;
        const bool shape = o.key == "model.n_layer" || o.key == "model.d_model" ||
                           o.key == "model.n_head" || o.key == "model.vocab_size" ||
                           o.key == "model.max_seq_len";
        if (shape || o.dump(c) != o.dump(defaults))
            model += (model.empty() ? "" : " ") + o.key.substr(6) + "=" + o.dump(c);
    }
    std::string out = "  model: " + model + "\n";
    if (!c.model.init_from.empty()) out += "  init_from: " + c.model.init_from + "\n";
    out += "  data: " + (c.data.synthetic ? std::string("synthetic") : c.data.path) +
           " | tokenizer " + c.data.tokenizer + " | cache " + c.data.cache_dir + "\n";
    out += "  train: steps=" + v("train.steps") + " batch_size=" + v("train.batch_size") +
           " seq_len=" + v("train.seq_len") + " grad_accum=" + v("train.grad_accum") +
           " seed=" + v("train.seed") + "\n";
    out += "  optim: " + c.optim.name + " lr=" + v("optim.lr") + " -> " + v("optim.end_lr") + " (" +
           c.optim.schedule + ", warmup " + v("optim.warmup_steps") +
           (c.optim.decay_steps > 0 ? ", decay to step " + v("optim.decay_steps") : "") +
           ") weight_decay=" + v("optim.weight_decay") +
           (c.optim.wd_mode == "independent" ? " (independent)" : "") + " clip " +
           c.optim.clip_mode + " " + v("optim.grad_clip") + "\n";
    out += "  parallel: data=" + v("parallel.data") + " model=" + v("parallel.model") +
           " zero_stage=" + v("parallel.zero_stage") + "\n";
    out += "  run directory: " + c.log.dir + "\n";
    return out;
}

std::vector<std::string> config_keys() {
    std::vector<std::string> keys;
    for (const auto& o : option_table().options)
        if (o.current.empty()) keys.push_back(o.key);
    return keys;
}

std::vector<OptionInfo> config_options() {
    const Config defaults;
    std::vector<OptionInfo> out;
    for (const auto& o : option_table().options)
        out.push_back(
            {o.section, o.key, o.type, o.dump(defaults), o.constraint, o.help, o.current});
    return out;
}

void check_config_overrides(const std::vector<std::string>& overrides) {
    Loader loader(option_table());
    for (const auto& o : overrides) loader.apply_override(o);
    loader.take("default");  // throws the problems found; the values' ranges are not checked
}

std::string config_help() {
    const OptionTable& table = option_table();
    const Config defaults;
    std::size_t width = 0;
    for (const auto& o : table.options) width = std::max(width, o.key.size());
    std::string out;
    for (const auto& o : table.options) {
        if (!o.current.empty()) continue;  // older names: `meshlm config --list`
        std::string line = "  " + o.key + std::string(width - o.key.size() + 2, ' ') + o.type +
                           " = " + o.dump(defaults);
        if (!o.constraint.empty()) line += " (" + o.constraint + ")";
        out += line + "\n" + std::string(width + 6, ' ') + o.help + "\n";
    }
    return out;
}

}  // namespace meshlm

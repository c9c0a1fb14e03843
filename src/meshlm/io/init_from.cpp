#include "meshlm/io/init_from.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <sstream>

#include "meshlm/core/error.h"
#include "meshlm/io/checkpoint.h"
#include "meshlm/io/hf_model.h"
#include "meshlm/io/safetensors.h"
#include "meshlm/io/safetensors_set.h"
#include "meshlm/io/weights.h"
#include "meshlm/model/transformer_layout.h"

namespace fs = std::filesystem;

namespace meshlm {

namespace {

// Blocks named in meshlm tensor names ("h.<l>.attn...").
int layers_in_names(const std::vector<std::string>& names) {
    static const std::regex block(R"(^h\.([0-9]+)\.)");
    int n = 0;
    std::smatch m;
    for (const auto& name : names)
        if (std::regex_search(name, m, block)) n = std::max(n, std::stoi(m[1]) + 1);
    return n;
}

}  // namespace

std::vector<int> parse_layer_map(const std::string& text, int n_layer, int source_layers) {
    std::vector<int> map;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        std::size_t used = 0;
        int l = -1;
        try {
            l = std::stoi(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || item.find_first_not_of(" ", used) != std::string::npos || l < 0 ||
            l >= source_layers)
            MESHLM_INVALID("model.init_from_layers: '", item, "' is not a block of the source (0..",
                           source_layers - 1, ")");
        map.push_back(l);
    }
    if (static_cast<int>(map.size()) != n_layer)
        MESHLM_INVALID("model.init_from_layers lists ", map.size(), " blocks but model.n_layer is ",
                       n_layer, ": give one source block per layer, e.g. \"0,0,1,1,...\"");
    return map;
}

int init_source_layers(const std::string& path) {
    if (fs::is_regular_file(path)) return layers_in_names(SafetensorsFile(path).names());
    if (fs::exists(path + "/config.json")) return read_hf_config(path).model.n_layer;
    if (SafetensorsSet::present(path) && !is_checkpoint_dir(path))
        return layers_in_names(SafetensorsSet(path).names());
    const std::string dir = resolve_checkpoint(path);
    try {
        return YAML::LoadFile(dir + "/config.yaml")["model"]["n_layer"].as<int>();
    } catch (const YAML::Exception& e) {
        MESHLM_INVALID("model.init_from: cannot read model.n_layer from ", dir,
                       "/config.yaml: ", e.what());
    }
}

std::string load_init_weights(const std::string& path, const ModelConfig& model,
                              const ParamLayout& layout, float* params) {
    if (!model.init_from_layers.empty()) {
        // Load the source at its own depth, then give each block its mapped source block.
        ModelConfig source = model;
        source.n_layer = init_source_layers(path);
        source.init_from_layers.clear();
        const std::vector<int> map =
            parse_layer_map(model.init_from_layers, model.n_layer, source.n_layer);
        const ParamLayout from = transformer_layout(source);
        std::vector<float> weights(from.total());
        const std::string what = load_init_weights(path, source, from, weights.data());
        for (const ParamSlice& s : layout.slices()) {
            std::string name = s.name;
            if (s.layer >= 0) {
                const std::string prefix = "h." + std::to_string(s.layer) + ".";
                name = "h." + std::to_string(map[s.layer]) + "." + name.substr(prefix.size());
            }
            const ParamSlice* src = from.find(name);
            MESHLM_CHECK(src && src->numel == s.numel, "no source tensor ", name, " for ", s.name);
            std::copy_n(weights.data() + src->offset, s.numel, params + s.offset);
        }
        return what + ", blocks " + model.init_from_layers;
    }
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
    if (SafetensorsSet::present(path) && !is_checkpoint_dir(path)) {
        load_weights(path, layout, params);
        return path;
    }
    const std::string dir = resolve_checkpoint(path);
    read_checkpoint(dir);  // verifies sizes and checksums first
    load_checkpoint_model(dir, model, params);
    return dir;
}

}  // namespace meshlm

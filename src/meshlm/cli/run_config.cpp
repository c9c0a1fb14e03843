#include "meshlm/cli/run_config.h"

#include <algorithm>
#include <filesystem>

#include "meshlm/core/error.h"
#include "meshlm/data/prepare.h"

namespace fs = std::filesystem;

namespace meshlm {

namespace {

bool given(const std::vector<std::string>& keys, const char* key) {
    return std::find(keys.begin(), keys.end(), key) != keys.end();
}

std::string absolute(const std::string& p) {
    return p.empty() ? p : fs::absolute(p).lexically_normal().string();
}

// Overrides carrying what the prepared data's meta.json says, for the keys left unset.
std::vector<std::string> meta_overrides(const Config& c, const std::vector<std::string>& keys) {
    if (c.data.synthetic || !is_prepared_dir(c.data.path)) return {};
    const PreparedMeta meta = read_prepared_meta(c.data.path);
    std::vector<std::string> out;
    if (!given(keys, "data.tokenizer")) {
        std::error_code ec;
        if (meta.tokenizer_spec != "byte" && !fs::exists(meta.tokenizer_spec, ec))
            MESHLM_INVALID("data.path ", c.data.path, " was prepared with the tokenizer '",
                           meta.tokenizer_spec,
                           "' (its meta.json), which is not found from here; set data.tokenizer "
                           "to that tokenizer's file");
        out.push_back("data.tokenizer=" + meta.tokenizer_spec);
    }
    if (!given(keys, "model.vocab_size")) {
        out.push_back("model.vocab_size=" + std::to_string(meta.vocab_size));
    } else if (c.model.vocab_size < meta.vocab_size) {
        MESHLM_INVALID("model.vocab_size is ", c.model.vocab_size, " but the data in ", c.data.path,
                       " has a vocabulary of ", meta.vocab_size, " (tokenizer '",
                       meta.tokenizer_spec,
                       "', its meta.json): leave model.vocab_size unset to "
                       "take the data's, or set it to at least ",
                       meta.vocab_size);
    }
    return out;
}

}  // namespace

Config resolve_run_config(const std::string& path, const std::vector<std::string>& overrides,
                          std::vector<std::string>* keys_given) {
    std::vector<std::string> keys;
    Config c = load_config(path, overrides, &keys);
    if (const auto extra = meta_overrides(c, keys); !extra.empty()) {
        std::vector<std::string> all = overrides;
        all.insert(all.end(), extra.begin(), extra.end());
        c = load_config(path, all);
    }
    make_paths_absolute(c);
    if (c.log.dir.empty()) c.log.dir = "runs/" + c.name;
    if (keys_given) *keys_given = std::move(keys);
    return c;
}

void make_paths_absolute(Config& c) {
    c.data.path = absolute(c.data.path);
    c.data.cache_dir = absolute(c.data.cache_dir);
    if (c.data.tokenizer != "byte") c.data.tokenizer = absolute(c.data.tokenizer);
    c.model.init_from = absolute(c.model.init_from);
}

}  // namespace meshlm

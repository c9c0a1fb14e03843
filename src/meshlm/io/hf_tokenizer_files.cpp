#include "meshlm/io/hf_tokenizer_files.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "meshlm/core/atomic_file.h"
#include "meshlm/core/error.h"
#include "meshlm/data/byte_tokenizer_json.h"
#include "meshlm/data/chat_template.h"

namespace fs = std::filesystem;

namespace meshlm {

namespace {

// (Its own name: a unity batch may also hold a file with `using nlohmann::json`.)
using ojson = nlohmann::ordered_json;

ojson read_json(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) MESHLM_INVALID("cannot read ", path);
    std::stringstream ss;
    ss << in.rdbuf();
    ojson j = ojson::parse(ss.str(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) MESHLM_INVALID(path, ": not a JSON object");
    return j;
}

// The text of added token `id` in a tokenizer.json ("" when it has none).
std::string added_token_text(const std::string& tokenizer_json, int id) {
    const ojson j = read_json(tokenizer_json);
    if (auto it = j.find("added_tokens"); it != j.end() && it->is_array())
        for (const ojson& t : *it)
            if (t.value("id", -1) == id && t.contains("content") && t["content"].is_string())
                return t["content"].get<std::string>();
    return "";
}

// The tokenizer_config.json of a run that has none: the end-of-text token as BOS, EOS and pad,
// serve's chat template for it, and no clean-up of spaces (meshlm decodes text as it is).
ojson generated_tokenizer_config(const HfTokenizerSource& src, bool byte) {
    const std::string eot = byte              ? kByteEotToken
                            : src.eot_id >= 0 ? added_token_text(src.spec, src.eot_id)
                                              : "";
    ojson c = ojson::object();
    if (!eot.empty())
        for (const char* key : {"bos_token", "eos_token", "pad_token"}) c[key] = eot;
    c["chat_template"] = ChatTemplate::fallback_source();
    c["clean_up_tokenization_spaces"] = false;
    c["model_max_length"] = src.model_max_length;
    // The byte tokenizer encodes "<|endoftext|>" typed in a text as its bytes.
    if (byte) c["split_special_tokens"] = true;
    c["tokenizer_class"] = "PreTrainedTokenizerFast";
    return c;
}

// special_tokens_map.json from a tokenizer_config.json's special tokens.
ojson special_tokens_map(const ojson& config) {
    const nlohmann::json all = special_tokens_of(nlohmann::json::parse(config.dump()));
    ojson m = ojson::object();
    for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"})
        if (all.contains(key)) m[key] = all[key];
    return m;
}

std::string find_in(const std::vector<std::string>& dirs, const char* name) {
    for (const std::string& d : dirs)
        if (fs::is_regular_file(d + "/" + name)) return d + "/" + name;
    return "";
}

}  // namespace

std::vector<std::string> copy_hf_tokenizer_files(const std::string& in, const std::string& out) {
    std::vector<std::string> found;
    for (const char* name : kHfTokenizerSideFiles)
        if (fs::is_regular_file(in + "/" + name)) {
            read_json(in + "/" + name);  // refuse a broken file before copying any
            found.push_back(name);
        }
    for (const std::string& name : found)
        fs::copy_file(in + "/" + name, out + "/" + name, fs::copy_options::overwrite_existing);
    return found;
}

std::string write_hf_tokenizer_files(const std::string& dir, const HfTokenizerSource& src) {
    const bool byte = src.spec == "byte";
    const bool hf_json = src.spec.ends_with(".json");
    if (const std::string gen = find_in(src.dirs, "generation_config.json"); !gen.empty())
        fs::copy_file(gen, dir + "/generation_config.json", fs::copy_options::overwrite_existing);
    if (!byte && !hf_json)
        return "no Hugging Face tokenizer file written (the run's tokenizer is " + src.spec +
               "; token ids are the same, give transformers a matching tokenizer yourself)";
    if (byte)
        write_file_atomic(dir + "/tokenizer.json", byte_tokenizer_json());
    else
        fs::copy_file(src.spec, dir + "/tokenizer.json");
    std::string note =
        byte ? "tokenizer.json of the byte tokenizer written" : "tokenizer.json copied";
    ojson config;
    if (const std::string own = find_in(src.dirs, "tokenizer_config.json"); !own.empty()) {
        config = read_json(own);
        fs::copy_file(own, dir + "/tokenizer_config.json");
        note += ", tokenizer_config.json copied";
    } else {
        config = generated_tokenizer_config(src, byte);
        write_file_atomic(dir + "/tokenizer_config.json", config.dump(2) + "\n");
        note += ", tokenizer_config.json written";
    }
    if (const std::string own = find_in(src.dirs, "special_tokens_map.json"); !own.empty()) {
        fs::copy_file(own, dir + "/special_tokens_map.json");
        note += ", special_tokens_map.json copied";
    } else {
        write_file_atomic(dir + "/special_tokens_map.json",
                          special_tokens_map(config).dump(2) + "\n");
        note += ", special_tokens_map.json written";
    }
    return note;
}

}  // namespace meshlm

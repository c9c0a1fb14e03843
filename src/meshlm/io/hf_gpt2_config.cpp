// config.json of an HF GPT-2 model <-> ModelConfig. Absent fields take GPT2Config's defaults,
// as transformers does; fields that change the math beyond what meshlm implements are refused.
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "meshlm/core/error.h"
#include "meshlm/io/hf_gpt2.h"

namespace meshlm {
namespace {

using nlohmann::json;

int get_int(const json& j, const std::string& where, const char* key, int fallback, int minimum) {
    if (!j.contains(key) || j[key].is_null()) return fallback;
    const json& v = j[key];
    if (!v.is_number_integer() || v.get<long long>() < minimum || v.get<long long>() > (1 << 30))
        MESHLM_INVALID(where, ": \"", key, "\" is ", v.dump(),
                       "; expected an integer >= ", minimum);
    return v.get<int>();
}

double get_number(const json& j, const std::string& where, const char* key, double fallback) {
    if (!j.contains(key) || j[key].is_null()) return fallback;
    if (!j[key].is_number())
        MESHLM_INVALID(where, ": \"", key, "\" is ", j[key].dump(), "; expected a number");
    return j[key].get<double>();
}

bool get_bool(const json& j, const std::string& where, const char* key, bool fallback) {
    if (!j.contains(key) || j[key].is_null()) return fallback;
    if (!j[key].is_boolean())
        MESHLM_INVALID(where, ": \"", key, "\" is ", j[key].dump(), "; expected true or false");
    return j[key].get<bool>();
}

// The token id fields may be an int, null, or (in some configs) a list; meshlm keeps one.
int get_token_id(const json& j, const char* key) {
    if (!j.contains(key)) return -1;
    const json& v = j[key];
    if (v.is_number_integer()) return v.get<int>();
    if (v.is_array() && !v.empty() && v[0].is_number_integer()) return v[0].get<int>();
    return -1;
}

// The float's shortest decimal form as a double, so 1e-5f is written "1e-05", not
// "9.99999974737875e-06", and reads back as the same float.
double shortest(float f) {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, f);
    *r.ptr = '\0';
    return std::strtod(buf, nullptr);
}

}  // namespace

HfGpt2Config read_hf_gpt2_config(const std::string& dir) {
    const std::string path = dir + "/config.json";
    if (!std::filesystem::is_directory(dir))
        MESHLM_INVALID(dir, " is not a directory (expected a Hugging Face GPT-2 model directory)");
    std::ifstream in(path);
    if (!in) MESHLM_INVALID(dir, " has no config.json: not a Hugging Face model directory");
    json j;
    try {
        j = json::parse(in);
    } catch (const std::exception& e) {
        MESHLM_INVALID(path, ": not valid JSON: ", e.what());
    }
    if (!j.is_object()) MESHLM_INVALID(path, ": not a JSON object");
    if (!j.contains("model_type") || !j["model_type"].is_string())
        MESHLM_INVALID(path, ": no \"model_type\"; not a Hugging Face model config");
    const std::string type = j["model_type"].get<std::string>();
    if (type != "gpt2")
        MESHLM_INVALID(path, ": model_type is \"", type, "\"; meshlm converts only \"gpt2\"");

    const std::string act =
        j.contains("activation_function") && j["activation_function"].is_string()
            ? j["activation_function"].get<std::string>()
            : "gelu_new";
    if (act != "gelu_new" && act != "gelu_pytorch_tanh")
        MESHLM_INVALID(path, ": activation_function \"", act,
                       "\" is not supported; meshlm's GPT-2 uses the tanh GELU "
                       "(gelu_new / gelu_pytorch_tanh)");
    if (!get_bool(j, path, "scale_attn_weights", true))
        MESHLM_INVALID(path,
                       ": scale_attn_weights is false; meshlm always scales attention scores "
                       "by 1/sqrt(head_dim)");
    if (get_bool(j, path, "scale_attn_by_inverse_layer_idx", false))
        MESHLM_INVALID(path,
                       ": scale_attn_by_inverse_layer_idx is true; meshlm does not scale "
                       "attention by 1/(layer+1)");
    if (get_bool(j, path, "add_cross_attention", false))
        MESHLM_INVALID(path, ": add_cross_attention is true; meshlm's GPT-2 is decoder-only");
    // reorder_and_upcast_attn only moves the scaling and computes attention in fp32, which
    // meshlm always does: same function, so it is accepted.

    HfGpt2Config c;
    ModelConfig& m = c.model;
    m.n_layer = get_int(j, path, "n_layer", 12, 1);
    m.d_model = get_int(j, path, "n_embd", 768, 1);
    m.n_head = get_int(j, path, "n_head", 12, 1);
    m.vocab_size = get_int(j, path, "vocab_size", 50257, 1);
    m.max_seq_len = get_int(j, path, "n_positions", 1024, 1);
    m.ln_eps = static_cast<float>(get_number(j, path, "layer_norm_epsilon", 1e-5));
    m.init_std = static_cast<float>(get_number(j, path, "initializer_range", 0.02));
    if (m.d_model % m.n_head != 0)
        MESHLM_INVALID(path, ": n_head ", m.n_head, " does not divide n_embd ", m.d_model);
    if (!(m.ln_eps > 0)) MESHLM_INVALID(path, ": layer_norm_epsilon must be > 0");
    const int inner = get_int(j, path, "n_inner", m.mlp_width(), 1);
    if (inner != m.mlp_width())
        MESHLM_INVALID(path, ": n_inner is ", inner,
                       "; meshlm's MLP width is 4 * n_embd = ", m.mlp_width());
    c.tie_word_embeddings = get_bool(j, path, "tie_word_embeddings", true);
    c.bos_token_id = get_token_id(j, "bos_token_id");
    c.eos_token_id = get_token_id(j, "eos_token_id");
    return c;
}

std::string hf_gpt2_config_json(const ModelConfig& m, int eot_id, DType dtype) {
    const json token = eot_id >= 0 ? json(eot_id) : json(nullptr);
    // The dropout rates the weights were trained with, so that fine-tuning the export in
    // transformers does not silently turn dropout on. meshlm's model has no dropout yet: 0.
    // When ModelConfig gains rates (embedding, attention, residual), they must be written here.
    const double embd_pdrop = 0.0, attn_pdrop = 0.0, resid_pdrop = 0.0;
    // Keys sorted, as transformers writes them; GPT2Config's defaults for what meshlm lacks
    // (the dropout rates aside).
    json j = {
        {"activation_function", "gelu_new"},
        {"add_cross_attention", false},
        {"architectures", {"GPT2LMHeadModel"}},
        {"attn_pdrop", attn_pdrop},
        {"bos_token_id", token},
        {"dtype", dtype == DType::bf16 ? "bfloat16" : "float32"},
        {"embd_pdrop", embd_pdrop},
        {"eos_token_id", token},
        {"initializer_range", shortest(m.init_std)},
        {"layer_norm_epsilon", shortest(m.ln_eps)},
        {"model_type", "gpt2"},
        {"n_embd", m.d_model},
        {"n_head", m.n_head},
        {"n_inner", nullptr},
        {"n_layer", m.n_layer},
        {"n_positions", m.max_seq_len},
        {"pad_token_id", nullptr},
        {"reorder_and_upcast_attn", false},
        {"resid_pdrop", resid_pdrop},
        {"scale_attn_by_inverse_layer_idx", false},
        {"scale_attn_weights", true},
        {"summary_activation", nullptr},
        {"summary_first_dropout", 0.1},
        {"summary_proj_to_labels", true},
        {"summary_type", "cls_index"},
        {"summary_use_proj", true},
        {"tie_word_embeddings", true},
        {"use_cache", true},
        {"vocab_size", m.vocab_size},
    };
    return j.dump(2) + "\n";
}

}  // namespace meshlm

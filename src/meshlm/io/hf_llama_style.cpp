// The config fields, RoPE settings and tensor names Llama, Mistral and Qwen2 share.
#include "meshlm/io/hf_llama_style.h"

#include <regex>

#include "meshlm/core/error.h"

namespace meshlm {
namespace {

using nlohmann::json;
using namespace hf_json;

// RoPE settings: transformers 5 writes `rope_parameters` {rope_theta, rope_type, ...}; configs
// of transformers 4 have a top-level `rope_theta` and `rope_scaling` ({"rope_type" or "type",
// ...} or null). Fills m.rope_*; refuses a scaling meshlm does not compute, naming the field.
void read_rope(const json& j, const std::string& path, ModelConfig& m) {
    const bool v5 = j.contains("rope_parameters") && j["rope_parameters"].is_object();
    const char* group = v5 ? "rope_parameters" : "rope_scaling";
    json params = json::object();
    if (j.contains(group) && !j[group].is_null()) {
        if (!j[group].is_object())
            MESHLM_INVALID(path, ": \"", group, "\" is ", j[group].dump(), "; expected an object");
        params = j[group];
    }
    const std::string where = path + ": " + group;
    m.rope_base = static_cast<float>(
        get_number(params, where, "rope_theta", get_number(j, path, "rope_theta", 10000.)));
    const char* type_key = params.contains("rope_type") ? "rope_type" : "type";
    const std::string type = get_string(params, where, type_key, "default");
    for (const json* holder : {&j, static_cast<const json*>(&params)})
        if (get_number(*holder, where, "partial_rotary_factor", 1.) != 1.)
            MESHLM_INVALID(where, ": partial_rotary_factor is ",
                           (*holder)["partial_rotary_factor"].dump(),
                           "; meshlm's Llama-style models rotate the whole head");
    auto required = [&](const char* key) {
        if (!params.contains(key) || params[key].is_null())
            MESHLM_INVALID(path, ": ", group, ".", key, " is missing (", group, ".", type_key,
                           " is \"", type, "\")");
        return get_number(params, where, key, 0.);
    };
    if (type == "default") {
        m.rope_scaling = "none";
    } else if (type == "linear") {
        m.rope_scaling = "linear";
        m.rope_factor = static_cast<float>(required("factor"));
    } else if (type == "llama3") {
        m.rope_scaling = "llama3";
        m.rope_factor = static_cast<float>(required("factor"));
        m.rope_low_freq_factor = static_cast<float>(required("low_freq_factor"));
        m.rope_high_freq_factor = static_cast<float>(required("high_freq_factor"));
        m.rope_original_max_seq = static_cast<int>(required("original_max_position_embeddings"));
        if (!(m.rope_high_freq_factor > m.rope_low_freq_factor))
            MESHLM_INVALID(where, ": high_freq_factor must exceed low_freq_factor");
    } else {
        MESHLM_INVALID(path, ": ", group, ".", type_key, " is \"", type,
                       "\"; meshlm computes RoPE scaling default, linear and llama3 only");
    }
    if (!(m.rope_base > 0) || !(m.rope_factor > 0))
        MESHLM_INVALID(where, ": rope_theta and factor must be > 0");
}

json rope_scaling_json(const ModelConfig& m) {
    if (m.rope_scaling == "linear")
        return {{"factor", shortest(m.rope_factor)}, {"rope_type", "linear"}};
    if (m.rope_scaling == "llama3")
        return {{"factor", shortest(m.rope_factor)},
                {"high_freq_factor", shortest(m.rope_high_freq_factor)},
                {"low_freq_factor", shortest(m.rope_low_freq_factor)},
                {"original_max_position_embeddings", m.rope_original_max_seq},
                {"rope_type", "llama3"}};
    return nullptr;
}

}  // namespace

bool LlamaStyleFamily::is_buffer(const std::string& n) const {
    // Rotary frequencies some transformers 4 versions saved with the weights.
    static const std::regex inv_freq(R"(layers\.\d+\.self_attn\.rotary_emb\.inv_freq)");
    return std::regex_match(n, inv_freq);
}

void LlamaStyleFamily::read_config(const json& j, const std::string& path, HfModelConfig& c) const {
    const LlamaStyleDefaults d = defaults();
    ModelConfig& m = c.model;
    m = ModelConfig{};
    m.vocab_size = get_int(j, path, "vocab_size", d.vocab_size, 1);
    m.d_model = get_int(j, path, "hidden_size", d.hidden_size, 1);
    m.d_ff = get_int(j, path, "intermediate_size", d.intermediate_size, 1);
    m.n_layer = get_int(j, path, "num_hidden_layers", d.num_hidden_layers, 1);
    m.n_head = get_int(j, path, "num_attention_heads", d.num_attention_heads, 1);
    if (m.d_model % m.n_head != 0)
        MESHLM_INVALID(path, ": num_attention_heads ", m.n_head, " does not divide hidden_size ",
                       m.d_model);
    // Present but null means "as many as the query heads" in every config class.
    const int kv_default = j.contains("num_key_value_heads") || d.num_key_value_heads == 0
                               ? m.n_head
                               : d.num_key_value_heads;
    const int kv = get_int(j, path, "num_key_value_heads", kv_default, 1);
    if (m.n_head % kv != 0)
        MESHLM_INVALID(path, ": num_key_value_heads ", kv, " does not divide num_attention_heads ",
                       m.n_head);
    m.n_kv_head = kv == m.n_head ? 0 : kv;
    const int head_dim = get_int(j, path, "head_dim", m.head_dim(), 1);
    if (head_dim != m.head_dim())
        MESHLM_INVALID(path, ": head_dim is ", head_dim, "; meshlm's head width is hidden_size / ",
                       "num_attention_heads = ", m.head_dim());
    m.max_seq_len = get_int(j, path, "max_position_embeddings", d.max_position_embeddings, 1);
    m.block = "sequential";
    m.norm = "rmsnorm";
    m.norm_bias = false;
    m.norm_eps = static_cast<float>(get_number(j, path, "rms_norm_eps", d.rms_norm_eps));
    if (!(m.norm_eps > 0)) MESHLM_INVALID(path, ": rms_norm_eps must be > 0");
    m.position = "rope";
    m.rope_style = "half";
    m.rope_dim = 0;
    read_rope(j, path, m);
    const std::string act = get_string(j, path, "hidden_act", "silu");
    if (act == "silu")
        m.mlp = "swiglu";
    else if (act == "gelu")  // erf GELU of the gate: meshlm's geglu
        m.mlp = "geglu";
    else
        MESHLM_INVALID(path, ": hidden_act \"", act,
                       "\" is not supported; meshlm's gated MLP computes silu (swiglu) and gelu "
                       "(geglu)");
    m.tied_head = get_bool(j, path, "tie_word_embeddings", false);
    m.head_bias = false;
    m.init_std = static_cast<float>(get_number(j, path, "initializer_range", 0.02));
    read_family_fields(j, path, m);
}

std::string LlamaStyleFamily::mismatch(const ModelConfig& m) const {
    if (m.block != "sequential") return need("block", m.block, "sequential");
    if (m.norm != "rmsnorm") return need("norm", m.norm, "rmsnorm");
    if (m.norm_bias) return need("norm_bias", true, false);
    if (m.position != "rope") return need("position", m.position, "rope");
    if (m.rope_style != "half") return need("rope_style", m.rope_style, "half");
    if (m.rotary_dims() != m.head_dim())
        return need("rope_dim", std::to_string(m.rope_dim), "0, the whole head");
    if (m.mlp != "swiglu" && m.mlp != "geglu") return need("mlp", m.mlp, "swiglu or geglu");
    if (m.head_bias) return need("head_bias", true, false);
    return bias_mismatch(m);
}

json LlamaStyleFamily::config_json(const ModelConfig& m, const json& token, DType dtype) const {
    // The transformers 4 form of the RoPE settings (top-level rope_theta + rope_scaling), which
    // transformers 5 reads too.
    json j = {
        {"architectures", {architecture()}},
        {"attention_dropout", m.dropout_attn},
        {"bos_token_id", token},
        {"dtype", hf_json::torch_dtype(dtype)},
        {"eos_token_id", token},
        {"hidden_act", m.mlp == "swiglu" ? "silu" : "gelu"},
        {"hidden_size", m.d_model},
        {"initializer_range", shortest(m.init_std)},
        {"intermediate_size", m.mlp_width()},
        {"max_position_embeddings", m.max_seq_len},
        {"model_type", model_type()},
        {"num_attention_heads", m.n_head},
        {"num_hidden_layers", m.n_layer},
        {"num_key_value_heads", m.kv_heads()},
        {"pad_token_id", nullptr},
        {"rms_norm_eps", shortest(m.norm_eps)},
        {"rope_scaling", rope_scaling_json(m)},
        {"rope_theta", shortest(m.rope_base)},
        {"tie_word_embeddings", m.tied_head},
        {"use_cache", true},
        {"vocab_size", m.vocab_size},
    };
    write_family_fields(m, j);
    return j;
}

std::vector<HfPart> LlamaStyleFamily::parts(const ModelConfig&, const ParamSlice& s) const {
    if (s.name == "wte.weight") return {{"model.embed_tokens.weight", s.shape[0]}};
    if (s.name == "ln_f.weight") return {{"model.norm.weight", s.shape[0]}};
    if (s.name == "lm_head.weight") return {{"lm_head.weight", s.shape[0]}};
    const std::string b = block_part(s);
    const std::string h = "model.layers." + std::to_string(s.layer) + ".";
    const std::string kind = b.substr(b.rfind('.') + 1);  // weight | bias
    const std::vector<std::int64_t> rows = section_rows(s);
    if (b == "ln_1.weight") return {{h + "input_layernorm.weight", rows[0]}};
    if (b == "ln_2.weight") return {{h + "post_attention_layernorm.weight", rows[0]}};
    if (b == "attn.c_attn." + kind) {
        MESHLM_CHECK(rows.size() == 3, s.name, " has ", rows.size(), " sections");
        return {{h + "self_attn.q_proj." + kind, rows[0]},
                {h + "self_attn.k_proj." + kind, rows[1]},
                {h + "self_attn.v_proj." + kind, rows[2]}};
    }
    if (b == "attn.c_proj." + kind) return {{h + "self_attn.o_proj." + kind, rows[0]}};
    if (b == "mlp.c_fc." + kind) {
        MESHLM_CHECK(rows.size() == 2, s.name, " has ", rows.size(), " sections");
        return {{h + "mlp.gate_proj." + kind, rows[0]}, {h + "mlp.up_proj." + kind, rows[1]}};
    }
    if (b == "mlp.c_proj." + kind) return {{h + "mlp.down_proj." + kind, rows[0]}};
    MESHLM_CHECK(false, name(), " has no tensor for ", s.name);
    return {};
}

}  // namespace meshlm

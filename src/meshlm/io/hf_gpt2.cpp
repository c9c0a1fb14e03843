// GPT2LMHeadModel <-> meshlm: meshlm's names are GPT-2's, under `transformer.`; the block
// matrices are Conv1D ([in, out]); the head is always tied (an untied config is accepted when
// its lm_head.weight equals wte). Absent config fields take GPT2Config's defaults.
#include "meshlm/io/hf_gpt2.h"

#include <regex>

#include "meshlm/core/error.h"
#include "meshlm/io/hf_family.h"

namespace meshlm {
namespace {

using nlohmann::json;
using namespace hf_json;

class Gpt2 : public HfFamily {
  public:
    const char* model_type() const override { return "gpt2"; }
    const char* architecture() const override { return "GPT2LMHeadModel"; }
    const char* name() const override { return "GPT-2"; }
    std::string base_prefix() const override { return "transformer."; }
    bool is_buffer(const std::string& n) const override {
        // Causal-mask buffers of older transformers.
        static const std::regex mask(R"(h\.\d+\.attn\.(bias|masked_bias))");
        return std::regex_match(n, mask);
    }
    bool transposed(const ParamSlice& s) const override { return s.is_matrix() && s.layer >= 0; }

    void read_config(const json& j, const std::string& path, HfModelConfig& c) const override {
        const std::string act = get_string(j, path, "activation_function", "gelu_new");
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
        ModelConfig& m = c.model;
        m = ModelConfig{};  // the defaults are GPT-2's architecture
        m.n_layer = get_int(j, path, "n_layer", 12, 1);
        m.d_model = get_int(j, path, "n_embd", 768, 1);
        m.n_head = get_int(j, path, "n_head", 12, 1);
        m.vocab_size = get_int(j, path, "vocab_size", 50257, 1);
        m.max_seq_len = get_int(j, path, "n_positions", 1024, 1);
        m.norm_eps = static_cast<float>(get_number(j, path, "layer_norm_epsilon", 1e-5));
        m.init_std = static_cast<float>(get_number(j, path, "initializer_range", 0.02));
        if (m.d_model % m.n_head != 0)
            MESHLM_INVALID(path, ": n_head ", m.n_head, " does not divide n_embd ", m.d_model);
        if (!(m.norm_eps > 0)) MESHLM_INVALID(path, ": layer_norm_epsilon must be > 0");
        const int inner = get_int(j, path, "n_inner", m.mlp_width(), 1);
        if (inner != m.mlp_width())
            MESHLM_INVALID(path, ": n_inner is ", inner,
                           "; meshlm's MLP width is 4 * n_embd = ", m.mlp_width());
        c.head_copies_embedding = !get_bool(j, path, "tie_word_embeddings", true);
    }

    std::string mismatch(const ModelConfig& m) const override {
        if (m.block != "sequential") return need("block", m.block, "sequential");
        if (m.norm != "layernorm") return need("norm", m.norm, "layernorm");
        if (!m.norm_bias) return need("norm_bias", false, true);
        if (m.position != "learned") return need("position", m.position, "learned");
        if (m.kv_heads() != m.n_head)
            return need("n_kv_head", std::to_string(m.n_kv_head), "0 or n_head");
        if (!m.qkv_bias) return need("qkv_bias", false, true);
        if (!m.proj_bias) return need("proj_bias", false, true);
        if (!m.mlp_bias) return need("mlp_bias", false, true);
        if (m.mlp != "gelu_tanh") return need("mlp", m.mlp, "gelu_tanh");
        if (m.mlp_width() != 4 * m.d_model)
            return need("d_ff", std::to_string(m.d_ff), "0 or 4 * d_model");
        if (!m.tied_head) return need("tied_head", false, true);
        if (m.head_bias) return need("head_bias", true, false);
        return "";
    }

    json config_json(const ModelConfig& m, const json& token, DType dtype) const override {
        // Keys sorted, as transformers writes them; GPT2Config's defaults for what meshlm lacks.
        return {
            {"activation_function", "gelu_new"},
            {"add_cross_attention", false},
            {"architectures", {"GPT2LMHeadModel"}},
            {"attn_pdrop", m.dropout_attn},
            {"bos_token_id", token},
            {"dtype", hf_json::torch_dtype(dtype)},
            {"embd_pdrop", m.dropout_embd},
            {"eos_token_id", token},
            {"initializer_range", shortest(m.init_std)},
            {"layer_norm_epsilon", shortest(m.norm_eps)},
            {"model_type", "gpt2"},
            {"n_embd", m.d_model},
            {"n_head", m.n_head},
            {"n_inner", nullptr},
            {"n_layer", m.n_layer},
            {"n_positions", m.max_seq_len},
            {"pad_token_id", nullptr},
            {"reorder_and_upcast_attn", false},
            {"resid_pdrop", m.dropout_resid},
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
    }

    std::vector<HfPart> parts(const ModelConfig&, const ParamSlice& s) const override {
        return {{"transformer." + s.name, s.shape[0]}};
    }
};

}  // namespace

const HfFamily& hf_gpt2_family() {
    static const Gpt2 family;
    return family;
}

HfGpt2Config read_hf_gpt2_config(const std::string& dir) {
    const HfModelConfig h = read_hf_config(dir);
    if (h.model_type != "gpt2")
        MESHLM_INVALID(dir, "/config.json: model_type is \"", h.model_type, "\", not \"gpt2\"");
    HfGpt2Config c;
    c.model = h.model;
    c.tie_word_embeddings = !h.head_copies_embedding;
    c.bos_token_id = h.bos_token_id;
    c.eos_token_id = h.eos_token_id;
    return c;
}

std::string hf_gpt2_config_json(const ModelConfig& model, int eot_id, DType dtype) {
    const json token = eot_id >= 0 ? json(eot_id) : json(nullptr);
    return hf_gpt2_family().config_json(model, token, dtype).dump(2) + "\n";
}

void read_hf_gpt2_weights(const std::string& dir, const HfGpt2Config& cfg,
                          const ParamLayout& layout, float* params) {
    HfModelConfig h;
    h.model_type = "gpt2";
    h.architecture = "GPT2LMHeadModel";
    h.family = "GPT-2";
    h.model = cfg.model;
    h.head_copies_embedding = !cfg.tie_word_embeddings;
    read_hf_weights(dir, h, layout, params);
}

std::vector<std::string> write_hf_gpt2(const std::string& dir, const ModelConfig& model,
                                       const ParamLayout& layout, const float* params,
                                       const HfExportOptions& opt) {
    const std::string why = hf_gpt2_family().mismatch(model);
    if (!why.empty()) MESHLM_INVALID("not a GPT-2: ", why);
    return write_hf_model(dir, model, layout, params, opt).files;
}

}  // namespace meshlm

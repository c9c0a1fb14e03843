// GPTJForCausalLM <-> meshlm: a parallel block (one ln_1 feeding attention and MLP), LayerNorm
// with bias, interleaved rotary positions (rotate_every_two) on the first rotary_dim dims of each
// head with base 10000 -- the exponent's denominator is rotary_dim --, no q/k/v or out_proj
// biases, an MLP with biases, and a head with a bias. q_proj | k_proj | v_proj are the rows of
// meshlm's c_attn. Absent config fields take GPTJConfig's defaults.
#include <regex>

#include "meshlm/core/error.h"
#include "meshlm/io/hf_family.h"

namespace meshlm {
namespace {

using nlohmann::json;
using namespace hf_json;

// HF's activation names for the functions meshlm's MLP computes.
std::string mlp_of_activation(const std::string& act) {
    if (act == "gelu_new" || act == "gelu_pytorch_tanh") return "gelu_tanh";
    if (act == "gelu") return "gelu";  // erf GELU
    if (act == "relu") return "relu";
    return "";
}

class Gptj : public HfFamily {
  public:
    const char* model_type() const override { return "gptj"; }
    const char* architecture() const override { return "GPTJForCausalLM"; }
    const char* name() const override { return "GPT-J"; }
    std::string base_prefix() const override { return "transformer."; }
    bool is_buffer(const std::string& n) const override {
        static const std::regex mask(R"(h\.\d+\.attn\.(bias|masked_bias))");
        return std::regex_match(n, mask);
    }

    void read_config(const json& j, const std::string& path, HfModelConfig& c) const override {
        ModelConfig& m = c.model;
        m = ModelConfig{};
        m.n_layer = get_int(j, path, "n_layer", 28, 1);
        m.d_model = get_int(j, path, "n_embd", 4096, 1);
        m.n_head = get_int(j, path, "n_head", 16, 1);
        m.vocab_size = get_int(j, path, "vocab_size", 50400, 1);
        m.max_seq_len = get_int(j, path, "n_positions", 2048, 1);
        if (m.d_model % m.n_head != 0)
            MESHLM_INVALID(path, ": n_head ", m.n_head, " does not divide n_embd ", m.d_model);
        m.block = "parallel";
        m.norm = "layernorm";
        m.norm_bias = true;
        m.norm_eps = static_cast<float>(get_number(j, path, "layer_norm_epsilon", 1e-5));
        if (!(m.norm_eps > 0)) MESHLM_INVALID(path, ": layer_norm_epsilon must be > 0");
        m.position = "rope";
        m.rope_style = "interleaved";
        m.rope_base = 10000.f;
        const bool has_rotary = j.contains("rotary_dim") && !j["rotary_dim"].is_null();
        if (has_rotary) {
            m.rope_dim = get_int(j, path, "rotary_dim", 64, 2);
            if (m.rope_dim % 2 != 0 || m.rope_dim > m.head_dim())
                MESHLM_INVALID(path, ": rotary_dim is ", m.rope_dim,
                               "; it must be even and at most the head width n_embd / n_head = ",
                               m.head_dim());
            if (m.rope_dim == m.head_dim()) m.rope_dim = 0;
        } else if (m.n_head != 1) {
            // transformers then builds n_embd-wide sin/cos tables and applies them to
            // head-wide q and k, which only fits one head.
            MESHLM_INVALID(path,
                           ": rotary_dim is null, which makes transformers' GPT-J rotate n_embd "
                           "dims of each n_embd / n_head-wide head; set rotary_dim");
        }
        const std::string act = get_string(j, path, "activation_function", "gelu_new");
        m.mlp = mlp_of_activation(act);
        if (m.mlp.empty())
            MESHLM_INVALID(path, ": activation_function \"", act,
                           "\" is not supported; meshlm's MLP computes gelu_new / "
                           "gelu_pytorch_tanh (tanh GELU), gelu (erf) and relu");
        m.d_ff = get_int(j, path, "n_inner", 4 * m.d_model, 1);
        if (m.d_ff == 4 * m.d_model) m.d_ff = 0;
        m.qkv_bias = false;
        m.proj_bias = false;
        m.mlp_bias = true;
        m.tied_head = get_bool(j, path, "tie_word_embeddings", false);
        m.head_bias = true;
        m.init_std = static_cast<float>(get_number(j, path, "initializer_range", 0.02));
    }

    std::string mismatch(const ModelConfig& m) const override {
        if (m.block != "parallel") return need("block", m.block, "parallel");
        if (m.norm != "layernorm") return need("norm", m.norm, "layernorm");
        if (!m.norm_bias) return need("norm_bias", false, true);
        if (m.position != "rope") return need("position", m.position, "rope");
        if (m.rope_style != "interleaved") return need("rope_style", m.rope_style, "interleaved");
        if (m.rope_base != 10000.f)
            return need("rope_base", num(m.rope_base), "10000, fixed in GPT-J");
        if (m.rope_scaling != "none") return need("rope_scaling", m.rope_scaling, "none");
        if (m.kv_heads() != m.n_head)
            return need("n_kv_head", std::to_string(m.n_kv_head), "0 or n_head");
        if (m.qkv_bias) return need("qkv_bias", true, false);
        if (m.proj_bias) return need("proj_bias", true, false);
        if (!m.mlp_bias) return need("mlp_bias", false, true);
        if (m.mlp != "gelu_tanh" && m.mlp != "gelu" && m.mlp != "relu")
            return need("mlp", m.mlp, "gelu_tanh, gelu or relu");
        if (!m.head_bias) return need("head_bias", false, true);
        return "";
    }

    json config_json(const ModelConfig& m, const json& token, DType dtype) const override {
        const char* act = m.mlp == "gelu_tanh" ? "gelu_new" : m.mlp.c_str();
        return {
            {"activation_function", act},
            {"architectures", {"GPTJForCausalLM"}},
            {"attn_pdrop", m.dropout_attn},
            {"bos_token_id", token},
            {"dtype", hf_json::torch_dtype(dtype)},
            {"embd_pdrop", m.dropout_embd},
            {"eos_token_id", token},
            {"initializer_range", shortest(m.init_std)},
            {"layer_norm_epsilon", shortest(m.norm_eps)},
            {"model_type", "gptj"},
            {"n_embd", m.d_model},
            {"n_head", m.n_head},
            {"n_inner", m.d_ff == 0 ? json(nullptr) : json(m.d_ff)},
            {"n_layer", m.n_layer},
            {"n_positions", m.max_seq_len},
            {"pad_token_id", nullptr},
            {"resid_pdrop", m.dropout_resid},
            {"rotary_dim", m.rotary_dims()},
            {"tie_word_embeddings", m.tied_head},
            {"use_cache", true},
            {"vocab_size", m.vocab_size},
        };
    }

    std::vector<HfPart> parts(const ModelConfig& m, const ParamSlice& s) const override {
        const std::int64_t C = m.d_model;
        if (s.name == "wte.weight" || s.name == "ln_f.weight" || s.name == "ln_f.bias")
            return {{"transformer." + s.name, s.shape[0]}};
        if (s.name == "lm_head.weight" || s.name == "lm_head.bias") return {{s.name, s.shape[0]}};
        const std::string b = block_part(s);
        const std::string h = "transformer.h." + std::to_string(s.layer) + ".";
        if (b == "ln_1.weight" || b == "ln_1.bias") return {{h + b, C}};
        if (b == "attn.c_attn.weight")
            return {{h + "attn.q_proj.weight", C},
                    {h + "attn.k_proj.weight", C},
                    {h + "attn.v_proj.weight", C}};
        if (b == "attn.c_proj.weight") return {{h + "attn.out_proj.weight", C}};
        if (b == "mlp.c_fc.weight" || b == "mlp.c_fc.bias")
            return {{h + "mlp.fc_in." + b.substr(b.rfind('.') + 1), s.shape[0]}};
        if (b == "mlp.c_proj.weight" || b == "mlp.c_proj.bias")
            return {{h + "mlp.fc_out." + b.substr(b.rfind('.') + 1), C}};
        MESHLM_CHECK(false, "GPT-J has no tensor for ", s.name);
        return {};
    }
};

}  // namespace

const HfFamily& hf_gptj_family() {
    static const Gptj family;
    return family;
}

}  // namespace meshlm

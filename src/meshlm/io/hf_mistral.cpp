// MistralForCausalLM <-> meshlm: the Llama-style mapping (io/hf_llama_style.h) without biases.
// Mistral's sliding-window attention is computed only when it cannot bind: a window of at least
// max_position_embeddings positions (or none) is the full causal attention meshlm computes.
// An export never picks Mistral: LlamaForCausalLM computes the same function.
// Defaults are MistralConfig's (sliding_window 4096 when absent).
#include "meshlm/core/error.h"
#include "meshlm/io/hf_llama_style.h"

namespace meshlm {
namespace {

using nlohmann::json;
using namespace hf_json;

class Mistral : public LlamaStyleFamily {
  public:
    const char* model_type() const override { return "mistral"; }
    const char* architecture() const override { return "MistralForCausalLM"; }
    const char* name() const override { return "Mistral"; }

  protected:
    LlamaStyleDefaults defaults() const override {
        return {32000, 4096, 14336, 32, 32, 8, 131072, 1e-6};
    }
    void read_family_fields(const json& j, const std::string& path, ModelConfig& m) const override {
        m.qkv_bias = m.proj_bias = m.mlp_bias = false;
        const bool null_window = j.contains("sliding_window") && j["sliding_window"].is_null();
        if (!null_window) {
            const int w = get_int(j, path, "sliding_window", 4096, 1);
            if (w < m.max_seq_len)
                MESHLM_INVALID(path, ": sliding_window is ", w,
                               j.contains("sliding_window") ? "" : " (MistralConfig's default)",
                               "; meshlm attends over the whole context (max_position_embeddings ",
                               m.max_seq_len,
                               "), so it converts Mistral models whose sliding_window is null "
                               "or at least that long");
        }
    }
    std::string bias_mismatch(const ModelConfig& m) const override {
        if (m.qkv_bias) return need("qkv_bias", true, false);
        if (m.proj_bias) return need("proj_bias", true, false);
        if (m.mlp_bias) return need("mlp_bias", true, false);
        return "";
    }
    void write_family_fields(const ModelConfig& m, json& j) const override {
        j["head_dim"] = m.head_dim();
        j["sliding_window"] = nullptr;
    }
};

}  // namespace

const HfFamily& hf_mistral_family() {
    static const Mistral family;
    return family;
}

}  // namespace meshlm

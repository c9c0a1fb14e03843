// Qwen2ForCausalLM <-> meshlm: the Llama-style mapping (io/hf_llama_style.h) with biases on
// q_proj, k_proj and v_proj only (none on o_proj or the MLP). Sliding-window layers are refused:
// use_sliding_window must be false and every layer_types entry "full_attention".
// Defaults are Qwen2Config's.
#include "meshlm/core/error.h"
#include "meshlm/io/hf_llama_style.h"

namespace meshlm {
namespace {

using nlohmann::json;
using namespace hf_json;

class Qwen2 : public LlamaStyleFamily {
  public:
    const char* model_type() const override { return "qwen2"; }
    const char* architecture() const override { return "Qwen2ForCausalLM"; }
    const char* name() const override { return "Qwen2"; }

  protected:
    LlamaStyleDefaults defaults() const override {
        return {151936, 4096, 22016, 32, 32, 0, 32768, 1e-6};
    }
    void read_family_fields(const json& j, const std::string& path, ModelConfig& m) const override {
        m.qkv_bias = true;
        m.proj_bias = m.mlp_bias = false;
        if (get_bool(j, path, "use_sliding_window", false))
            MESHLM_INVALID(path,
                           ": use_sliding_window is true; meshlm attends over the whole context "
                           "(sliding-window layers are not supported)");
        if (j.contains("layer_types") && !j["layer_types"].is_null()) {
            const json& types = j["layer_types"];
            if (!types.is_array())
                MESHLM_INVALID(path, ": \"layer_types\" is ", types.dump(), "; expected a list");
            for (std::size_t i = 0; i < types.size(); ++i)
                if (types[i] != "full_attention")
                    MESHLM_INVALID(path, ": layer_types[", i, "] is ", types[i].dump(),
                                   "; meshlm computes full_attention layers only");
        }
    }
    std::string bias_mismatch(const ModelConfig& m) const override {
        if (!m.qkv_bias) return need("qkv_bias", false, true);
        if (m.proj_bias) return need("proj_bias", true, false);
        if (m.mlp_bias) return need("mlp_bias", true, false);
        return "";
    }
    void write_family_fields(const ModelConfig& m, json& j) const override {
        j["layer_types"] = std::vector<std::string>(m.n_layer, "full_attention");
        j["max_window_layers"] = m.n_layer;
        j["sliding_window"] = nullptr;
        j["use_sliding_window"] = false;
    }
};

}  // namespace

const HfFamily& hf_qwen2_family() {
    static const Qwen2 family;
    return family;
}

}  // namespace meshlm

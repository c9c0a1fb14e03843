// LlamaForCausalLM <-> meshlm: the Llama-style mapping (io/hf_llama_style.h) with
// attention_bias (biases of q, k, v and o_proj together) and mlp_bias; pretraining_tp must be 1.
// Defaults are LlamaConfig's.
#include "meshlm/core/error.h"
#include "meshlm/io/hf_llama_style.h"

namespace meshlm {
namespace {

using nlohmann::json;
using namespace hf_json;

class Llama : public LlamaStyleFamily {
  public:
    const char* model_type() const override { return "llama"; }
    const char* architecture() const override { return "LlamaForCausalLM"; }
    const char* name() const override { return "Llama"; }

  protected:
    LlamaStyleDefaults defaults() const override {
        return {32000, 4096, 11008, 32, 32, 0, 2048, 1e-6};
    }
    void read_family_fields(const json& j, const std::string& path, ModelConfig& m) const override {
        m.qkv_bias = m.proj_bias = get_bool(j, path, "attention_bias", false);
        m.mlp_bias = get_bool(j, path, "mlp_bias", false);
        const int tp = get_int(j, path, "pretraining_tp", 1, 1);
        if (tp != 1)
            MESHLM_INVALID(path, ": pretraining_tp is ", tp,
                           "; meshlm computes the projections unsliced (pretraining_tp 1)");
    }
    std::string bias_mismatch(const ModelConfig& m) const override {
        if (m.qkv_bias != m.proj_bias)
            return need("proj_bias", m.proj_bias, m.qkv_bias) +
                   ": Llama's attention_bias sets the q, k, v and o_proj biases together";
        return "";
    }
    void write_family_fields(const ModelConfig& m, json& j) const override {
        j["attention_bias"] = m.qkv_bias;
        j["head_dim"] = m.head_dim();
        j["mlp_bias"] = m.mlp_bias;
        j["pretraining_tp"] = 1;
    }
};

}  // namespace

const HfFamily& hf_llama_family() {
    static const Llama family;
    return family;
}

}  // namespace meshlm

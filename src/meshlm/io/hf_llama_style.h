// What Llama, Mistral and Qwen2 share (internal to io/): a sequential block of RMSNorm without
// bias, rotary positions over the whole head in rotate_half order (HF checkpoints are stored
// that way: no q/k permutation), a gated MLP (silu -> swiglu, gelu -> geglu), and the names
// model.embed_tokens, model.layers.N.{input_layernorm, self_attn.{q,k,v,o}_proj,
// post_attention_layernorm, mlp.{gate,up,down}_proj}, model.norm, lm_head. meshlm's c_attn rows
// are q_proj | k_proj | v_proj, its c_fc rows gate_proj | up_proj. Each family adds its biases and
// the config fields only it has.
#pragma once

#include "meshlm/io/hf_family.h"

namespace meshlm {

// The config class's defaults, for fields a config.json leaves out.
struct LlamaStyleDefaults {
    int vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads;
    int num_key_value_heads;  // 0: num_attention_heads
    int max_position_embeddings;
    double rms_norm_eps;
};

class LlamaStyleFamily : public HfFamily {
  public:
    std::string base_prefix() const override { return "model."; }
    bool is_buffer(const std::string& n) const override;
    void read_config(const nlohmann::json& j, const std::string& where,
                     HfModelConfig& out) const override;
    std::string mismatch(const ModelConfig& m) const override;
    nlohmann::json config_json(const ModelConfig& m, const nlohmann::json& token,
                               DType dtype) const override;
    std::vector<HfPart> parts(const ModelConfig& m, const ParamSlice& s) const override;

  protected:
    virtual LlamaStyleDefaults defaults() const = 0;
    // The family's own fields: biases, sliding windows, ... (after the shared ones are read).
    virtual void read_family_fields(const nlohmann::json& j, const std::string& where,
                                    ModelConfig& m) const = 0;
    // Why m's biases are not this family's, "" if they are.
    virtual std::string bias_mismatch(const ModelConfig& m) const = 0;
    // Adds the family's own fields to config.json.
    virtual void write_family_fields(const ModelConfig& m, nlohmann::json& j) const = 0;
};

}  // namespace meshlm

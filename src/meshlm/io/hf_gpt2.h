// Hugging Face GPT-2 (`GPT2LMHeadModel`) directories through the GPT-2 names of io/hf_model.h,
// kept for callers written against GPT-2 alone.
//
// HF names carry a `transformer.` prefix (older files and bare GPT2Model files have none), and
// the four projection matrices are Conv1D weights stored [in, out], the transpose of meshlm's
// [out, in]: attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj. The head is tied to wte.
//
// exports: HfGpt2Config, read_hf_gpt2_config, hf_gpt2_config_json, read_hf_gpt2_weights,
//          write_hf_gpt2
#pragma once

#include <string>
#include <vector>

#include "meshlm/core/param_layout.h"
#include "meshlm/core/tensor.h"
#include "meshlm/io/hf_model.h"
#include "meshlm/model/model_config.h"

namespace meshlm {

struct HfGpt2Config {
    ModelConfig model;
    bool tie_word_embeddings = true;
    int bos_token_id = -1, eos_token_id = -1;  // -1: absent or null
};

// Reads dir/config.json, which must be a GPT-2 config (read_hf_config for any family).
HfGpt2Config read_hf_gpt2_config(const std::string& dir);

// config.json text for a GPT2LMHeadModel with these hyperparameters (hf_config_json).
std::string hf_gpt2_config_json(const ModelConfig& model, int eot_id, DType dtype);

// Reads the weights of dir into params laid out by transformer_layout(cfg.model)
// (read_hf_weights); a lm_head.weight of an untied config must equal wte.
void read_hf_gpt2_weights(const std::string& dir, const HfGpt2Config& cfg,
                          const ParamLayout& layout, float* params);

// Writes config.json, generation_config.json and the weights (write_hf_model); `model` must be
// a GPT-2. Returns the weight files written (relative to dir).
std::vector<std::string> write_hf_gpt2(const std::string& dir, const ModelConfig& model,
                                       const ParamLayout& layout, const float* params,
                                       const HfExportOptions& opt);

}  // namespace meshlm

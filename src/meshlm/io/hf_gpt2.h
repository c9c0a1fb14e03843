// Hugging Face GPT-2 (`GPT2LMHeadModel`) directories: config.json and model.safetensors (single
// or sharded), read into and written from meshlm's GPT-2 parameter layout.
//
// The math is the same model; what differs is naming and layout. HF names carry a
// `transformer.` prefix (older files and bare GPT2Model files have none), and the four
// projection matrices are Conv1D weights stored [in, out], the transpose of meshlm's [out, in]:
// attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj. The head is tied to wte on both sides.
//
// exports: HfGpt2Config, read_hf_gpt2_config, hf_gpt2_config_json, read_hf_gpt2_weights,
//          HfExportOptions, write_hf_gpt2
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "meshlm/core/tensor.h"
#include "meshlm/model/model_config.h"
#include "meshlm/core/param_layout.h"

namespace meshlm {

struct HfGpt2Config {
    ModelConfig model;
    bool tie_word_embeddings = true;
    int bos_token_id = -1, eos_token_id = -1;  // -1: absent or null
};

// Reads dir/config.json. Throws InvalidInput naming the field when the file is not a GPT-2
// config or asks for something meshlm's GPT-2 does not implement (another activation, an MLP
// width other than 4 * n_embd, unscaled or layer-scaled attention, cross-attention).
HfGpt2Config read_hf_gpt2_config(const std::string& dir);

// config.json text for a GPT2LMHeadModel with these hyperparameters; eot_id (-1: none) becomes
// bos_token_id and eos_token_id; dtype (f32 or bf16) is recorded as the weights' dtype.
std::string hf_gpt2_config_json(const ModelConfig& model, int eot_id, DType dtype);

// Reads the weights of dir (model.safetensors or its sharded index) into params, laid out by
// `layout` (transformer_layout(cfg.model)). Accepts `transformer.`-prefixed and bare names; skips the
// attention-mask buffers (h.N.attn.bias, h.N.attn.masked_bias) and a tied lm_head.weight.
// Every tensor's presence, shape and dtype (F32 or BF16) is checked before params is touched.
void read_hf_gpt2_weights(const std::string& dir, const HfGpt2Config& cfg,
                          const ParamLayout& layout, float* params);

struct HfExportOptions {
    DType dtype = DType::f32;         // f32, or bf16 (round to nearest even)
    std::size_t max_shard_bytes = 0;  // 0: one file
    int eot_id = -1;                  // the tokenizer's end-of-text id, -1 if none
};

// Writes config.json, generation_config.json and the weights (names as transformers'
// save_pretrained writes them) into dir. Returns the weight files written (relative to dir).
std::vector<std::string> write_hf_gpt2(const std::string& dir, const ModelConfig& model,
                                       const ParamLayout& layout, const float* params,
                                       const HfExportOptions& opt);

}  // namespace meshlm

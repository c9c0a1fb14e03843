// Hugging Face causal-LM directories (config.json + model.safetensors, single or sharded with
// model.safetensors.index.json) read into and written from meshlm's transformer.
//
// A family is chosen by config.json's model_type on import and by the ModelConfig on export
// (the first family whose architecture it is). Each family's mapping -- config fields, tensor
// names, which biases exist, how meshlm's fused q | k | v and gate | up rows split into HF
// tensors -- lives in its own io/hf_<family>.cpp; this file's functions do the generic part:
// parsing, refusing what meshlm does not compute with the field named, checking every tensor's
// presence, shape and dtype before anything is copied, and writing the files.
//
// exports: HfModelConfig, read_hf_config, read_hf_weights, HfExportOptions, HfExport,
//          write_hf_model, hf_config_json, hf_export_architecture, hf_architecture_mismatch
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "meshlm/core/param_layout.h"
#include "meshlm/core/tensor.h"
#include "meshlm/model/model_config.h"

namespace meshlm {

struct HfModelConfig {
    std::string model_type;    // config.json's, e.g. "llama"
    std::string architecture;  // the class meshlm maps it to, e.g. "LlamaForCausalLM"
    std::string family;        // for messages, e.g. "Llama"
    ModelConfig model;
    int bos_token_id = -1, eos_token_id = -1;  // -1: absent or null
    // config.json unties the head but meshlm's model of this family ties it: the file's
    // lm_head.weight must then equal the token embedding (GPT-2 only).
    bool head_copies_embedding = false;
};

// Reads dir/config.json. Throws InvalidInput naming the field when the file is not a config of
// a family meshlm converts (gpt2, gptj, llama, mistral, qwen2) or asks for something meshlm does
// not compute (another RoPE scaling, a binding sliding window, another activation, ...).
HfModelConfig read_hf_config(const std::string& dir);

// Reads the weights of dir into params, laid out by `layout` (transformer_layout(cfg.model)).
// Accepts names with and without the base model's prefix (`transformer.`, `model.`); skips
// buffers older files carry (attention masks, rotary inv_freq) and a tied lm_head.weight.
void read_hf_weights(const std::string& dir, const HfModelConfig& cfg, const ParamLayout& layout,
                     float* params);

struct HfExportOptions {
    DType dtype = DType::f32;         // f32, bf16 or f16 (round to nearest even)
    std::size_t max_shard_bytes = 0;  // 0: one file
    int eot_id = -1;                  // the tokenizer's end-of-text id, -1 if none
};

struct HfExport {
    std::string architecture;        // e.g. "LlamaForCausalLM"
    std::vector<std::string> files;  // weight files written, relative to dir
};

// The architecture `model` is exported as. Throws InvalidInput naming, for each family, the
// model.* key that does not map (ALiBi positions, a sqrelu MLP, ...).
std::string hf_export_architecture(const ModelConfig& model);

// config.json text for `model` as its family (keys sorted, as transformers writes them);
// eot_id (-1: none) becomes bos_token_id and eos_token_id; dtype (f32, bf16, f16) is recorded.
std::string hf_config_json(const ModelConfig& model, int eot_id, DType dtype);

// Writes config.json, generation_config.json and the weights (names as transformers'
// save_pretrained writes them, in layout order) into dir.
HfExport write_hf_model(const std::string& dir, const ModelConfig& model, const ParamLayout& layout,
                        const float* params, const HfExportOptions& opt);

// The model.* keys on which a training config `model` differs from an imported `hf` in what the
// network computes (not init, dropout or the loss), as "key: value (the model has hf-value)"
// lines; empty when they agree. model.init_from refuses weights run through another function.
std::vector<std::string> hf_architecture_mismatch(const ModelConfig& hf, const ModelConfig& model);

}  // namespace meshlm

// One Hugging Face architecture as a mapping onto meshlm's transformer (internal to io/): its
// config.json fields and its tensor names. io/hf_model.cpp does the generic work around it.
//
// exports: HfPart, HfFamily, the families (hf_gpt2_family, ...), hf_families, and the
//          config.json field readers the families share (namespace hf_json)
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "meshlm/core/param_layout.h"
#include "meshlm/io/hf_model.h"

namespace meshlm {

// An HF tensor holding `rows` consecutive rows of a meshlm slice (all of it when it is the only
// part): q_proj, k_proj, v_proj are the three parts of c_attn; gate_proj, up_proj of c_fc.
struct HfPart {
    std::string
        name;  // as save_pretrained writes it, e.g. "model.layers.0.self_attn.q_proj.weight"
    std::int64_t rows;
};

class HfFamily {
  public:
    virtual ~HfFamily() = default;
    virtual const char* model_type() const = 0;    // config.json's "model_type"
    virtual const char* architecture() const = 0;  // e.g. "LlamaForCausalLM"
    virtual const char* name() const = 0;          // e.g. "Llama", for messages
    // The base model's prefix ("transformer.", "model."): files of a bare base model, or older
    // ones, store those tensors without it.
    virtual std::string base_prefix() const = 0;
    // A stored tensor that is not a parameter (name without the base prefix): skipped on import.
    virtual bool is_buffer(const std::string&) const { return false; }
    // The slice is stored transposed, [in, out] (GPT-2's Conv1D); it then has one part.
    virtual bool transposed(const ParamSlice&) const { return false; }

    // config.json -> out.model, bos/eos and flags (out's names are set by the caller). Absent
    // fields take the HF config class's defaults; a field meshlm does not compute is refused
    // with InvalidInput naming it (`where` is the file).
    virtual void read_config(const nlohmann::json& j, const std::string& where,
                             HfModelConfig& out) const = 0;
    // Why `m` is not this architecture ("model.position is alibi (needs rope)"), "" if it is.
    virtual std::string mismatch(const ModelConfig& m) const = 0;
    // config.json of `m` (which has no mismatch); `token` is the bos/eos id or null.
    virtual nlohmann::json config_json(const ModelConfig& m, const nlohmann::json& token,
                                       DType dtype) const = 0;
    // The HF tensors holding slice `s` of transformer_layout(m), in row order.
    virtual std::vector<HfPart> parts(const ModelConfig& m, const ParamSlice& s) const = 0;
};

const HfFamily& hf_gpt2_family();
const HfFamily& hf_gptj_family();
const HfFamily& hf_llama_family();
const HfFamily& hf_mistral_family();
const HfFamily& hf_qwen2_family();
// Every family, in the order an export tries them (Mistral last: a Llama config covers it).
const std::vector<const HfFamily*>& hf_families();

// Readers of config.json fields: an absent or null field gives the fallback; a field of the
// wrong type is refused, naming it.
namespace hf_json {
int get_int(const nlohmann::json& j, const std::string& where, const char* key, int fallback,
            int minimum);
double get_number(const nlohmann::json& j, const std::string& where, const char* key,
                  double fallback);
bool get_bool(const nlohmann::json& j, const std::string& where, const char* key, bool fallback);
std::string get_string(const nlohmann::json& j, const std::string& where, const char* key,
                       const std::string& fallback);
// bos/eos ids: an int, null, or (some configs) a list of which meshlm keeps the first.
int get_token_id(const nlohmann::json& j, const char* key);
// The float's shortest decimal form as a double, so 1e-5f is written "1e-05", not
// "9.99999974737875e-06", and reads back as the same float.
double shortest(float f);
// "model.<key> is <have> (needs <want>)": one line of a mismatch.
std::string need(const char* key, const std::string& have, const std::string& want);
std::string need(const char* key, bool have, bool want);
std::string num(double v);  // shortest readable form, "500000", "1e-05"
// config.json's "dtype" for an export dtype: "float32", "bfloat16" or "float16".
const char* torch_dtype(DType t);
// Block slice "h.<l>.<rest>" -> rest ("attn.c_attn.weight"); "" outside the blocks.
std::string block_part(const ParamSlice& s);
// The element count of the layout's fused sections of `s` (q | k | v, gate | up) as rows.
std::vector<std::int64_t> section_rows(const ParamSlice& s);
}  // namespace hf_json

}  // namespace meshlm

// The family-independent part of HF import and export: config.json dispatch by model_type,
// tensors matched to layout slices through the family's parts, everything checked before params
// is touched, and the files written in layout order.
#include "meshlm/io/hf_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "meshlm/core/atomic_file.h"
#include "meshlm/core/error.h"
#include "meshlm/io/hf_family.h"
#include "meshlm/io/safetensors_set.h"

namespace meshlm {
namespace {

using nlohmann::json;

const HfFamily& family_of_type(const std::string& type, const std::string& where) {
    std::string list;
    for (const HfFamily* f : hf_families()) {
        if (type == f->model_type()) return *f;
        list += (list.empty() ? "\"" : ", \"") + std::string(f->model_type()) + "\"";
    }
    MESHLM_INVALID(where, ": model_type is \"", type, "\"; meshlm converts ", list);
}

const HfFamily& family_of_model(const ModelConfig& m) {
    if (m.qk_norm)
        MESHLM_INVALID(
            "model.qk_norm is true: no Hugging Face architecture meshlm exports "
            "normalizes the query and key heads (without gains); export needs "
            "model.qk_norm false");
    if (m.vq())
        MESHLM_INVALID(
            "model.attention is vq: no Hugging Face architecture has Transformer-VQ's "
            "attention; export needs model.attention full");
    if (!m.has_mlp())
        MESHLM_INVALID(
            "model.mlp is none: the Hugging Face architectures meshlm exports have an "
            "MLP in every block");
    if (m.head_scale() != 1.f)
        MESHLM_INVALID("model.logit_scale is ", m.logit_scale,
                       ": no Hugging Face architecture meshlm exports scales its logits; export "
                       "needs model.logit_scale 1");
    if (m.attn_act != "softmax")
        MESHLM_INVALID("model.attn_act is ", m.attn_act,
                       ": Hugging Face architectures attend with softmax; export needs "
                       "model.attn_act softmax");
    std::string why;
    for (const HfFamily* f : hf_families()) {
        const std::string mismatch = f->mismatch(m);
        if (mismatch.empty()) return *f;
        why += std::string("\n  ") + f->architecture() + ": " + mismatch;
    }
    MESHLM_INVALID(
        "the model does not map onto a Hugging Face architecture meshlm exports; what "
        "does not map, per architecture:",
        why);
}

// A slice's HF tensor part: its shape as stored.
Shape part_shape(const HfFamily& fam, const ParamSlice& s, std::int64_t rows) {
    if (fam.transposed(s)) return {s.shape[1], s.shape[0]};
    if (s.shape.ndim == 1) return {rows};
    return {rows, s.shape[1]};
}

// dst (cols, rows) = src (rows, cols) transposed.
void transpose(const float* src, float* dst, std::int64_t rows, std::int64_t cols) {
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
}

// read_hf_weights' state over one model directory: the parts every slice expects, by their full
// HF names, and the stored tensor each one comes from.
struct HfWeightMatch {
    const HfFamily& fam;
    const HfModelConfig& cfg;
    const ParamLayout& layout;
    const SafetensorsSet& set;
    const std::string where;   // the directory and its files, for messages
    const std::string prefix;  // the family's base-model prefix
    std::set<std::string> expected;
    std::vector<std::vector<HfPart>> parts;     // per layout slice
    std::map<std::string, std::string> source;  // expected name -> stored name
    bool prefixed = false, has_lm_head = false;

    HfWeightMatch(const HfFamily& f, const HfModelConfig& c, const ParamLayout& l,
                  const SafetensorsSet& s, std::string w)
        : fam(f), cfg(c), layout(l), set(s), where(std::move(w)), prefix(f.base_prefix()) {}

    std::string bare(const std::string& n) const {
        return n.rfind(prefix, 0) == 0 ? n.substr(prefix.size()) : n;
    }

    // Every part of every slice, by its full HF name.
    void expect_parts() {
        for (const ParamSlice& s : layout.slices()) {
            parts.push_back(fam.parts(cfg.model, s));
            std::int64_t row0 = 0;
            for (const HfPart& p : parts.back()) {
                expected.insert(p.name);
                row0 += p.rows;
            }
            MESHLM_CHECK(row0 == s.shape[0], s.name, ": parts cover ", row0, " of ", s.shape[0],
                         " rows");
        }
    }

    // Maps every stored name onto an expected one, or a known skip.
    void match_stored() {
        for (const std::string& stored : set.names()) {
            const bool p = !prefix.empty() && stored.rfind(prefix, 0) == 0;
            std::string name = stored;
            if (!expected.count(name) && !p && expected.count(prefix + stored))
                name = prefix + stored;
            if (expected.count(name)) {
                auto [it, fresh] = source.emplace(name, stored);
                if (!fresh)
                    MESHLM_INVALID(where, ": tensor '", bare(name), "' is stored twice, as '",
                                   it->second, "' and '", stored, "'");
                prefixed = prefixed || p;
            } else if (fam.is_buffer(bare(stored))) {
                continue;  // a buffer older transformers saved (masks, inv_freq), not a parameter
            } else if (stored == "lm_head.weight" && cfg.model.tied_head) {
                has_lm_head = true;  // the tied head's copy of the embedding
            } else {
                MESHLM_INVALID(where, ": unexpected tensor '", stored, "'; a ", fam.architecture(),
                               " with this config.json has no such parameter");
            }
        }
    }

    // Every expected part is stored, with its shape and a float dtype.
    void check_parts() const {
        auto shown = [&](const std::string& n) { return prefixed ? n : bare(n); };
        for (std::size_t i = 0; i < layout.slices().size(); ++i) {
            for (const HfPart& p : parts[i]) {
                auto it = source.find(p.name);
                if (it == source.end())
                    MESHLM_INVALID(where, ": missing tensor '", shown(p.name),
                                   "' (config.json implies ", cfg.model.n_layer, " layers)");
                const SafetensorsEntry& e = set.entry(it->second);
                const Shape want = part_shape(fam, layout.slices()[i], p.rows);
                if (!(e.shape == want))
                    MESHLM_INVALID(set.file_of(it->second), ": tensor '", it->second,
                                   "' has shape ", e.shape.str(), " but config.json implies ",
                                   want.str());
                if (e.dtype != DType::f32 && e.dtype != DType::bf16 && e.dtype != DType::f16)
                    MESHLM_INVALID(set.file_of(it->second), ": tensor '", it->second, "' is ",
                                   dtype_name(e.dtype), "; expected F32, BF16 or F16");
            }
        }
    }

    // An untied head is only representable when it equals the embedding anyway.
    void check_head_copy(const std::string& dir) const {
        const std::string& embedding = parts.front().front().name;  // wte.weight's tensor
        if (!has_lm_head)
            MESHLM_INVALID(dir,
                           ": config.json sets tie_word_embeddings false but there is no "
                           "lm_head.weight");
        const Shape want = layout.at("wte.weight").shape;
        if (set.f32("lm_head.weight", &want) != set.f32(source.at(embedding)))
            MESHLM_INVALID(dir, ": lm_head.weight differs from ", embedding,
                           " (tie_word_embeddings false); meshlm's ", fam.name(),
                           " ties its output head to the token embedding");
    }

    // Copies every part into its slice of params, in meshlm's layout.
    void copy_into(float* params) const {
        for (std::size_t i = 0; i < layout.slices().size(); ++i) {
            const ParamSlice& s = layout.slices()[i];
            float* dst = params + s.offset;
            for (const HfPart& p : parts[i]) {
                const Shape want = part_shape(fam, s, p.rows);
                auto v = set.f32(source.at(p.name), &want);
                if (fam.transposed(s))
                    transpose(v.data(), dst, want[0], want[1]);
                else
                    std::copy(v.begin(), v.end(), dst);
                dst += v.size();
            }
        }
    }
};

}  // namespace

const std::vector<const HfFamily*>& hf_families() {
    static const std::vector<const HfFamily*> all = {&hf_gpt2_family(), &hf_gptj_family(),
                                                     &hf_llama_family(), &hf_qwen2_family(),
                                                     &hf_mistral_family()};
    return all;
}

HfModelConfig read_hf_config(const std::string& dir) {
    const std::string path = dir + "/config.json";
    if (!std::filesystem::is_directory(dir))
        MESHLM_INVALID(dir, " is not a directory (expected a Hugging Face model directory)");
    std::ifstream in(path);
    if (!in) MESHLM_INVALID(dir, " has no config.json: not a Hugging Face model directory");
    json j;
    try {
        j = json::parse(in);
    } catch (const std::exception& e) {
        MESHLM_INVALID(path, ": not valid JSON: ", e.what());
    }
    if (!j.is_object()) MESHLM_INVALID(path, ": not a JSON object");
    if (!j.contains("model_type") || !j["model_type"].is_string())
        MESHLM_INVALID(path, ": no \"model_type\"; not a Hugging Face model config");
    const HfFamily& fam = family_of_type(j["model_type"].get<std::string>(), path);
    HfModelConfig c;
    c.model_type = fam.model_type();
    c.architecture = fam.architecture();
    c.family = fam.name();
    fam.read_config(j, path, c);
    c.bos_token_id = hf_json::get_token_id(j, "bos_token_id");
    c.eos_token_id = hf_json::get_token_id(j, "eos_token_id");
    check_model_config(c.model);
    return c;
}

void read_hf_weights(const std::string& dir, const HfModelConfig& cfg, const ParamLayout& layout,
                     float* params) {
    const HfFamily& fam = family_of_type(cfg.model_type, dir + "/config.json");
    SafetensorsSet set(dir, "model");
    HfWeightMatch m(fam, cfg, layout, set,
                    dir + " (" + set.files()[0] + (set.files().size() > 1 ? ", ..." : "") + ")");
    m.expect_parts();
    m.match_stored();
    // Check everything before copying anything.
    m.check_parts();
    if (cfg.head_copies_embedding) m.check_head_copy(dir);
    m.copy_into(params);
}

std::string hf_export_architecture(const ModelConfig& model) {
    return family_of_model(model).architecture();
}

std::string hf_config_json(const ModelConfig& model, int eot_id, DType dtype) {
    const json token = eot_id >= 0 ? json(eot_id) : json(nullptr);
    return family_of_model(model).config_json(model, token, dtype).dump(2) + "\n";
}

HfExport write_hf_model(const std::string& dir, const ModelConfig& model, const ParamLayout& layout,
                        const float* params, const HfExportOptions& opt) {
    MESHLM_CHECK(opt.dtype == DType::f32 || opt.dtype == DType::bf16 || opt.dtype == DType::f16,
                 "unsupported export dtype ", dtype_name(opt.dtype));
    const HfFamily& fam = family_of_model(model);
    std::filesystem::create_directories(dir);
    // One staging buffer per HF tensor, in HF layout and the target dtype.
    std::vector<std::vector<float>> f32;
    std::vector<std::vector<std::uint16_t>> half;  // bf16 or f16
    std::vector<SafetensorsTensor> tensors;
    std::vector<std::pair<HfPart, Shape>> all;
    for (const ParamSlice& s : layout.slices()) {
        const float* src = params + s.offset;
        for (const HfPart& p : fam.parts(model, s)) {
            const Shape shape = part_shape(fam, s, p.rows);
            std::vector<float> v(shape.numel());
            if (fam.transposed(s))
                transpose(src, v.data(), s.shape[0], s.shape[1]);
            else
                std::copy(src, src + v.size(), v.begin());
            src += v.size();
            if (opt.dtype == DType::f16) {
                // float16 tops out at 65504: a larger weight would be written as infinity.
                const auto big = std::find_if(v.begin(), v.end(),
                                              [](float x) { return std::fabs(x) >= 65520.f; });
                if (big != v.end())
                    MESHLM_INVALID("--dtype f16: tensor '", p.name, "' holds ", *big,
                                   ", beyond float16's largest value 65504; export as bf16 or "
                                   "f32 instead");
            }
            if (opt.dtype != DType::f32) {
                const auto to16 = opt.dtype == DType::f16 ? f16_from_f32 : bf16_from_f32;
                std::vector<std::uint16_t> h(v.size());
                for (std::size_t k = 0; k < v.size(); ++k) h[k] = to16(v[k]);
                half.push_back(std::move(h));
            } else {
                f32.push_back(std::move(v));
            }
            all.push_back({p, shape});
        }
    }
    // Data pointers once the staging vectors stop growing.
    for (std::size_t i = 0; i < all.size(); ++i) {
        const void* data = opt.dtype == DType::f32 ? static_cast<const void*>(f32[i].data())
                                                   : static_cast<const void*>(half[i].data());
        tensors.push_back({all[i].first.name, opt.dtype, all[i].second, data});
    }
    HfExport r;
    r.architecture = fam.architecture();
    r.files =
        write_safetensors_sharded(dir, "model", tensors, {{"format", "pt"}}, opt.max_shard_bytes);
    write_file_atomic(
        dir + "/config.json",
        fam.config_json(model, opt.eot_id >= 0 ? json(opt.eot_id) : json(nullptr), opt.dtype)
                .dump(2) +
            "\n");
    json gen = {{"_from_model_config", true}};
    if (opt.eot_id >= 0) gen["bos_token_id"] = gen["eos_token_id"] = opt.eot_id;
    write_file_atomic(dir + "/generation_config.json", gen.dump(2) + "\n");
    return r;
}

std::vector<std::string> hf_architecture_mismatch(const ModelConfig& hf, const ModelConfig& m) {
    std::vector<std::string> out;
    auto text = [](const auto& v) {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, bool>)
            return std::string(v ? "true" : "false");
        else {
            std::ostringstream os;
            os << v;
            return os.str();
        }
    };
    auto cmp = [&](const char* key, const auto& mine, const auto& theirs) {
        if (mine != theirs)
            out.push_back(std::string("model.") + key + " is " + text(mine) +
                          " (the Hugging Face model has " + text(theirs) + ")");
    };
    cmp("n_layer", m.n_layer, hf.n_layer);
    cmp("d_model", m.d_model, hf.d_model);
    cmp("n_head", m.n_head, hf.n_head);
    cmp("n_kv_head", m.kv_heads(), hf.kv_heads());
    cmp("vocab_size", m.vocab_size, hf.vocab_size);
    // A rotary model's max_seq_len only bounds the context; a learned table has that many rows.
    if (hf.position == "learned") cmp("max_seq_len", m.max_seq_len, hf.max_seq_len);
    cmp("block", m.block, hf.block);
    cmp("norm", m.norm, hf.norm);
    cmp("norm_bias", m.norm_bias, hf.norm_bias);
    cmp("norm_eps", m.norm_eps, hf.norm_eps);
    cmp("position", m.position, hf.position);
    cmp("qk_norm", m.qk_norm, hf.qk_norm);
    cmp("attn_act", m.attn_act, hf.attn_act);
    cmp("logit_scale", m.head_scale(), hf.head_scale());
    if (hf.position == "rope" && m.position == "rope") {
        cmp("rope_dim", m.rotary_dims(), hf.rotary_dims());
        cmp("rope_style", m.rope_style, hf.rope_style);
        cmp("rope_base", m.rope_base, hf.rope_base);
        cmp("rope_scaling", m.rope_scaling, hf.rope_scaling);
        if (hf.rope_scaling != "none") cmp("rope_factor", m.rope_factor, hf.rope_factor);
        if (hf.rope_scaling == "llama3") {
            cmp("rope_low_freq_factor", m.rope_low_freq_factor, hf.rope_low_freq_factor);
            cmp("rope_high_freq_factor", m.rope_high_freq_factor, hf.rope_high_freq_factor);
            cmp("rope_original_max_seq", m.rope_original_max_seq, hf.rope_original_max_seq);
        }
    }
    cmp("qkv_bias", m.qkv_bias, hf.qkv_bias);
    cmp("proj_bias", m.proj_bias, hf.proj_bias);
    cmp("mlp_bias", m.mlp_bias, hf.mlp_bias);
    cmp("mlp", m.mlp, hf.mlp);
    cmp("d_ff", m.mlp_width(), hf.mlp_width());
    cmp("tied_head", m.tied_head, hf.tied_head);
    cmp("head_bias", m.head_bias, hf.head_bias);
    return out;
}

}  // namespace meshlm

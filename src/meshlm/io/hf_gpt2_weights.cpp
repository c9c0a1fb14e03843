// HF GPT-2 weights <-> meshlm's flat parameter buffer: names, Conv1D transposes, dtypes.
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "meshlm/core/atomic_file.h"
#include "meshlm/core/error.h"
#include "meshlm/io/hf_gpt2.h"
#include "meshlm/io/safetensors_set.h"

namespace meshlm {
namespace {

const std::string kPrefix = "transformer.";

// The block matrices are Conv1D in HF ([in, out]); wte and wpe are embeddings, same layout.
bool is_conv1d(const ParamSlice& s) {
    return s.is_matrix() && s.layer >= 0;
}

Shape hf_shape(const ParamSlice& s) {
    return is_conv1d(s) ? Shape{s.shape[1], s.shape[0]} : s.shape;
}

// dst (cols, rows) = src (rows, cols) transposed.
void transpose(const float* src, float* dst, std::int64_t rows, std::int64_t cols) {
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
}

}  // namespace

void read_hf_gpt2_weights(const std::string& dir, const HfGpt2Config& cfg,
                          const ParamLayout& layout, float* params) {
    SafetensorsSet set(dir, "model");
    const std::string where =
        dir + " (" + set.files()[0] + (set.files().size() > 1 ? ", ..." : "") + ")";
    // Map every stored name onto a layout slice, or a known skip.
    static const std::regex mask_buffer(R"(h\.\d+\.attn\.(bias|masked_bias))");
    std::map<std::string, std::string> source;  // layout name -> stored name
    bool prefixed = false, has_lm_head = false;
    for (const std::string& stored : set.names()) {
        const bool p = stored.rfind(kPrefix, 0) == 0;
        const std::string bare = p ? stored.substr(kPrefix.size()) : stored;
        if (layout.find(bare)) {
            auto [it, fresh] = source.emplace(bare, stored);
            if (!fresh)
                MESHLM_INVALID(where, ": tensor '", bare, "' is stored twice, as '", it->second,
                               "' and '", stored, "'");
            prefixed = prefixed || p;
        } else if (std::regex_match(bare, mask_buffer)) {
            continue;  // causal-mask buffers of older transformers, not parameters
        } else if (stored == "lm_head.weight") {
            has_lm_head = true;
        } else {
            MESHLM_INVALID(where, ": unexpected tensor '", stored,
                           "'; a GPT2LMHeadModel holds transformer.{wte,wpe,h.N.*,ln_f}.* "
                           "(and a tied lm_head.weight)");
        }
    }
    // Check everything before copying anything.
    for (const auto& s : layout.slices()) {
        auto it = source.find(s.name);
        if (it == source.end())
            MESHLM_INVALID(where, ": missing tensor '", prefixed ? kPrefix : "", s.name,
                           "' (config.json says n_layer ", cfg.model.n_layer, ")");
        const SafetensorsEntry& e = set.entry(it->second);
        const Shape want = hf_shape(s);
        if (!(e.shape == want))
            MESHLM_INVALID(set.file_of(it->second), ": tensor '", it->second, "' has shape ",
                           e.shape.str(), " but config.json implies ", want.str());
        if (e.dtype != DType::f32 && e.dtype != DType::bf16)
            MESHLM_INVALID(set.file_of(it->second), ": tensor '", it->second, "' is ",
                           dtype_name(e.dtype), "; expected F32 or BF16");
    }
    if (!cfg.tie_word_embeddings) {
        // An untied head is only representable when it equals the embedding anyway.
        if (!has_lm_head)
            MESHLM_INVALID(dir,
                           ": config.json sets tie_word_embeddings false but there is no "
                           "lm_head.weight");
        const Shape want = layout.at("wte.weight").shape;
        auto head = set.f32("lm_head.weight", &want);
        if (head != set.f32(source.at("wte.weight")))
            MESHLM_INVALID(dir,
                           ": lm_head.weight differs from wte.weight (tie_word_embeddings "
                           "false); meshlm's GPT-2 ties its output head to the token embedding");
    }
    for (const auto& s : layout.slices()) {
        const Shape want = hf_shape(s);
        auto v = set.f32(source.at(s.name), &want);
        if (is_conv1d(s))
            transpose(v.data(), params + s.offset, want[0], want[1]);
        else
            std::copy(v.begin(), v.end(), params + s.offset);
    }
}

std::vector<std::string> write_hf_gpt2(const std::string& dir, const ModelConfig& model,
                                       const ParamLayout& layout, const float* params,
                                       const HfExportOptions& opt) {
    MESHLM_CHECK(opt.dtype == DType::f32 || opt.dtype == DType::bf16, "unsupported export dtype ",
                 dtype_name(opt.dtype));
    std::filesystem::create_directories(dir);
    // One staging buffer per tensor, in HF layout and the target dtype.
    std::vector<std::vector<float>> f32(layout.slices().size());
    std::vector<std::vector<std::uint16_t>> bf16(layout.slices().size());
    std::vector<SafetensorsTensor> tensors;
    for (std::size_t i = 0; i < layout.slices().size(); ++i) {
        const ParamSlice& s = layout.slices()[i];
        const Shape shape = hf_shape(s);
        f32[i].resize(s.numel);
        if (is_conv1d(s))
            transpose(params + s.offset, f32[i].data(), s.shape[0], s.shape[1]);
        else
            std::copy(params + s.offset, params + s.offset + s.numel, f32[i].begin());
        const void* data = f32[i].data();
        if (opt.dtype == DType::bf16) {
            bf16[i].resize(s.numel);
            for (std::size_t k = 0; k < s.numel; ++k) bf16[i][k] = bf16_from_f32(f32[i][k]);
            f32[i] = {};
            data = bf16[i].data();
        }
        tensors.push_back({kPrefix + s.name, opt.dtype, shape, data});
    }
    auto files =
        write_safetensors_sharded(dir, "model", tensors, {{"format", "pt"}}, opt.max_shard_bytes);
    write_file_atomic(dir + "/config.json", hf_gpt2_config_json(model, opt.eot_id, opt.dtype));
    nlohmann::json gen = {{"_from_model_config", true}};
    if (opt.eot_id >= 0) gen["bos_token_id"] = gen["eos_token_id"] = opt.eot_id;
    write_file_atomic(dir + "/generation_config.json", gen.dump(2) + "\n");
    return files;
}

}  // namespace meshlm

// Hugging Face GPT-J, Llama, Mistral and Qwen2 interop against transformers (fixtures by
// tools/reference/hf_families_reference.py): an imported model gives transformers' logits and
// its 64-token greedy continuation; HF -> meshlm -> HF writes the fixture's tensors bit for bit
// and a config.json that reads back to the same ModelConfig; what meshlm does not compute is
// refused with the field named, on import and on export; `meshlm convert` runs both ways.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "meshlm/cli/config.h"
#include "meshlm/core/buffer.h"
#include "meshlm/core/threads.h"
#include "meshlm/infer/generate.h"
#include "meshlm/io/hf_model.h"
#include "meshlm/io/safetensors_set.h"
#include "meshlm/io/weights.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"
#include "test_util.h"

namespace meshlm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// An HF model directory read into meshlm params.
struct Imported {
    HfModelConfig cfg;
    ParamLayout layout;
    Buffer<float> params;
    explicit Imported(const std::string& dir) : cfg(read_hf_config(dir)) {
        layout = transformer_layout(cfg.model);
        params = Buffer<float>(layout.total());
        read_hf_weights(dir, cfg, layout, params.data());
    }
};

// Every model.* key as config.yaml writes it: two ModelConfigs are the same when these are.
std::string model_yaml(const ModelConfig& m) {
    Config c;
    c.model = m;
    const std::string all = config_to_yaml(c);
    const auto begin = all.find("model:"), end = all.find("\n\n", begin);
    return all.substr(begin, end - begin);
}

std::vector<float> meshlm_logits(const ModelConfig& cfg, const float* params,
                                 const std::vector<std::int32_t>& tokens, int B, int T) {
    set_thread_count(2);
    Transformer model(cfg, B, T);
    model.forward(params, tokens.data(), nullptr, B, T);
    std::vector<float> out;
    for (int r = 0; r < B * T; ++r)
        out.insert(out.end(), model.logits() + std::size_t(r) * model.logits_stride(),
                   model.logits() + std::size_t(r) * model.logits_stride() + cfg.vocab_size);
    return out;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    double d = 0;
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
        d = std::max(d, std::fabs(double(a[i]) - b[i]));
    return d;
}

// Same names, dtypes, shapes and bytes.
void expect_same_tensors(const std::string& want_dir, const std::string& got_dir) {
    SafetensorsSet a(want_dir), b(got_dir);
    ASSERT_EQ(a.names(), b.names()) << want_dir << " vs " << got_dir;
    for (const auto& n : a.names()) {
        EXPECT_EQ(a.entry(n).dtype, b.entry(n).dtype) << n;
        EXPECT_TRUE(a.entry(n).shape == b.entry(n).shape) << n;
        const auto x = a.f32(n), y = b.f32(n);
        ASSERT_EQ(x.size(), y.size()) << n;
        EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)), 0) << n;
    }
}

struct Family {
    const char* dir;          // fixture directory (and <dir>_ref.safetensors)
    const char* model_type;   // config.json's
    const char* exported_as;  // the architecture an export writes
};

class HfFamilies : public ::testing::TestWithParam<Family> {};

TEST_P(HfFamilies, ImportGivesTransformersLogitsAndGreedyOutput) {
    const Family f = GetParam();
    Imported hf(test::fixture(f.dir));
    EXPECT_EQ(hf.cfg.model_type, f.model_type);
    SafetensorsFile ref(test::fixture(std::string(f.dir) + "_ref.safetensors"));
    const Shape& ls = ref.entry("logits").shape;
    const int B = static_cast<int>(ls[0]), T = static_cast<int>(ls[1]);
    ASSERT_EQ(ls[2], hf.cfg.model.vocab_size);
    auto mine = meshlm_logits(hf.cfg.model, hf.params.data(), ref.i32("tokens"), B, T);
    const auto theirs = ref.f32("logits");
    double scale = 0;
    for (float v : theirs) scale = std::max(scale, std::fabs(double(v)));
    const double d = max_abs_diff(mine, theirs);
    std::printf("%s: max |meshlm - transformers| logits = %.3g (logits up to %.3g)\n", f.dir, d,
                scale);
    EXPECT_LE(d, 1e-4);

    // Greedy over the KV cache, 64 tokens, token for token (no EOS in the fixture's output).
    const auto prompt = ref.i32("prompt"), greedy = ref.i32("greedy");
    SamplingOptions opt;
    opt.temperature = 0.f;
    opt.max_new_tokens = static_cast<int>(greedy.size() - prompt.size());
    opt.stop_at_eot = false;
    Decoder dec(hf.cfg.model, 1);
    auto out = generate_samples(dec, hf.params.data(), prompt, hf.cfg.eos_token_id, opt);
    EXPECT_EQ(out[0].tokens,
              std::vector<std::int32_t>(greedy.begin() + prompt.size(), greedy.end()));
}

TEST_P(HfFamilies, HfToMeshlmToHfIsBitExact) {
    const Family f = GetParam();
    const std::string src = test::fixture(f.dir), out = test::temp_dir("hf_fam_rt") + "/hf";
    Imported hf(src);
    const HfExport ex =
        write_hf_model(out, hf.cfg.model, hf.layout, hf.params.data(), {DType::f32, 0, 2});
    EXPECT_EQ(ex.architecture, f.exported_as);
    EXPECT_EQ(ex.files, std::vector<std::string>{"model.safetensors"});
    expect_same_tensors(src, out);
    // config.json reads back to the same ModelConfig.
    const HfModelConfig back = read_hf_config(out);
    EXPECT_EQ(model_yaml(back.model), model_yaml(hf.cfg.model));
    EXPECT_EQ(back.architecture, f.exported_as);
    auto j = json::parse(test::read_file(out + "/config.json"));
    EXPECT_EQ(j["architectures"][0], f.exported_as);
    EXPECT_EQ(j["eos_token_id"], 2);
    EXPECT_EQ(j["dtype"], "float32");
    // ... and to the same weights.
    Imported again(out);
    ASSERT_EQ(again.layout.total(), hf.layout.total());
    EXPECT_EQ(std::memcmp(again.params.data(), hf.params.data(), hf.layout.total() * 4), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, HfFamilies,
    ::testing::Values(Family{"hf_gptj_tiny", "gptj", "GPTJForCausalLM"},
                      Family{"hf_llama_tiny", "llama", "LlamaForCausalLM"},
                      // Mistral's function is Llama's (no window): meshlm keeps no family name.
                      Family{"hf_mistral_tiny", "mistral", "LlamaForCausalLM"},
                      Family{"hf_qwen2_tiny", "qwen2", "Qwen2ForCausalLM"}),
    [](const auto& info) { return std::string(info.param.model_type); });

TEST(HfFamiliesImport, MapsConfigFields) {
    const ModelConfig j = read_hf_config(test::fixture("hf_gptj_tiny")).model;
    EXPECT_EQ(j.block, "parallel");
    EXPECT_EQ(j.position, "rope");
    EXPECT_EQ(j.rope_style, "interleaved");
    EXPECT_EQ(j.rope_dim, 8);
    EXPECT_EQ(j.mlp, "gelu_tanh");
    EXPECT_FALSE(j.tied_head);
    EXPECT_TRUE(j.head_bias);
    EXPECT_FALSE(j.qkv_bias || j.proj_bias);
    EXPECT_TRUE(j.mlp_bias);
    EXPECT_EQ(j.max_seq_len, 128);

    const ModelConfig l = read_hf_config(test::fixture("hf_llama_tiny")).model;
    EXPECT_EQ(l.norm, "rmsnorm");
    EXPECT_FALSE(l.norm_bias);
    EXPECT_EQ(l.n_kv_head, 2);
    EXPECT_EQ(l.d_ff, 96);
    EXPECT_EQ(l.mlp, "swiglu");
    EXPECT_EQ(l.rope_style, "half");
    EXPECT_EQ(l.rope_scaling, "llama3");
    EXPECT_EQ(l.rope_base, 500000.f);
    EXPECT_EQ(l.rope_factor, 8.f);
    EXPECT_EQ(l.rope_original_max_seq, 64);
    EXPECT_FALSE(l.tied_head);

    const ModelConfig q = read_hf_config(test::fixture("hf_qwen2_tiny")).model;
    EXPECT_TRUE(q.qkv_bias);
    EXPECT_FALSE(q.proj_bias || q.mlp_bias);
    EXPECT_TRUE(q.tied_head);
    EXPECT_EQ(q.rope_base, 1e6f);
    EXPECT_EQ(q.rope_scaling, "none");
}

TEST(HfFamiliesImport, ShardedTransformers4ConfigIsTheSameModel) {
    // The sharded copy has the same weights in 3 files and the older rope_theta + rope_scaling.
    Imported one(test::fixture("hf_llama_tiny")), sharded(test::fixture("hf_llama_tiny_sharded"));
    EXPECT_EQ(model_yaml(sharded.cfg.model), model_yaml(one.cfg.model));
    EXPECT_EQ(std::memcmp(sharded.params.data(), one.params.data(), one.layout.total() * 4), 0);
    const std::string out = test::temp_dir("hf_fam_sharded");
    write_hf_model(out + "/one", sharded.cfg.model, sharded.layout, sharded.params.data(), {});
    expect_same_tensors(test::fixture("hf_llama_tiny_sharded"), out + "/one");
    // Sharded export, re-imported.
    auto ex = write_hf_model(out + "/many", sharded.cfg.model, sharded.layout,
                             sharded.params.data(), {DType::f32, 100 * 1000, -1});
    EXPECT_GT(ex.files.size(), 2u);
    EXPECT_EQ(ex.files.back(), "model.safetensors.index.json");
    expect_same_tensors(test::fixture("hf_llama_tiny_sharded"), out + "/many");
    Imported back(out + "/many");
    EXPECT_EQ(std::memcmp(back.params.data(), one.params.data(), one.layout.total() * 4), 0);
}

TEST(HfFamiliesImport, GeluGatedLlamaIsGeglu) {
    // hidden_act gelu is the erf GELU of the gate: meshlm's geglu, and back.
    const std::string dir = test::temp_dir("hf_fam_geglu") + "/hf";
    fs::copy(test::fixture("hf_llama_tiny"), dir, fs::copy_options::recursive);
    auto j = json::parse(test::read_file(dir + "/config.json"));
    j["hidden_act"] = "gelu";
    test::write_file(dir + "/config.json", j.dump(2));
    Imported hf(dir);
    EXPECT_EQ(hf.cfg.model.mlp, "geglu");
    const std::string out = fs::path(dir).parent_path().string() + "/out";
    write_hf_model(out, hf.cfg.model, hf.layout, hf.params.data(), {});
    EXPECT_EQ(json::parse(test::read_file(out + "/config.json"))["hidden_act"], "gelu");
    expect_same_tensors(dir, out);
}

TEST(HfFamiliesExport, Bf16RoundsToNearestEven) {
    Imported hf(test::fixture("hf_qwen2_tiny"));
    const std::string out = test::temp_dir("hf_fam_bf16") + "/hf";
    write_hf_model(out, hf.cfg.model, hf.layout, hf.params.data(), {DType::bf16, 0, 2});
    SafetensorsSet set(out);
    for (const auto& n : set.names()) EXPECT_EQ(set.entry(n).dtype, DType::bf16) << n;
    EXPECT_EQ(json::parse(test::read_file(out + "/config.json"))["dtype"], "bfloat16");
    Imported back(out);
    for (std::size_t i = 0; i < hf.layout.total(); ++i)
        ASSERT_EQ(back.params.data()[i], f32_from_bf16(bf16_from_f32(hf.params.data()[i]))) << i;
}

// Many hub checkpoints are float16. The fixture holds the Llama fixture's weights as torch's
// .half() rounded them, and transformers' logits on it loaded as float32.
TEST(HfFamiliesF16, ImportGivesTransformersLogits) {
    Imported hf(test::fixture("hf_llama_tiny_f16"));
    SafetensorsFile ref(test::fixture("hf_llama_tiny_f16_ref.safetensors"));
    const Shape& ls = ref.entry("logits").shape;
    const auto mine = meshlm_logits(hf.cfg.model, hf.params.data(), ref.i32("tokens"),
                                    static_cast<int>(ls[0]), static_cast<int>(ls[1]));
    const double d = max_abs_diff(mine, ref.f32("logits"));
    std::printf("f16 checkpoint: max |meshlm - transformers| logits = %.3g\n", d);
    EXPECT_LE(d, 1e-4);
    // The widening is exact: every weight is the f16 value transformers wrote.
    Imported f32(test::fixture("hf_llama_tiny"));
    for (std::size_t i = 0; i < hf.layout.total(); ++i)
        ASSERT_EQ(hf.params.data()[i], f32_from_f16(f16_from_f32(f32.params.data()[i]))) << i;
}

TEST(HfFamiliesF16, ExportWritesWhatTorchHalfWrites) {
    // Exporting the float32 fixture as f16 gives torch's .half() of it, bit for bit.
    Imported hf(test::fixture("hf_llama_tiny"));
    const std::string out = test::temp_dir("hf_fam_f16") + "/hf";
    write_hf_model(out, hf.cfg.model, hf.layout, hf.params.data(), {DType::f16, 0, 2});
    SafetensorsFile mine(out + "/model.safetensors"),
        torch(test::fixture("hf_llama_tiny_f16") + "/model.safetensors");
    ASSERT_EQ(mine.names(), torch.names());
    for (const auto& n : mine.names()) {
        ASSERT_EQ(mine.entry(n).dtype, DType::f16) << n;
        ASSERT_EQ(torch.entry(n).dtype, DType::f16) << n;
        ASSERT_TRUE(mine.entry(n).shape == torch.entry(n).shape) << n;
        EXPECT_EQ(std::memcmp(mine.data(n), torch.data(n), 2 * mine.entry(n).shape.numel()), 0)
            << n;
    }
    EXPECT_EQ(json::parse(test::read_file(out + "/config.json"))["dtype"], "float16");
    EXPECT_EQ(read_hf_config(out).model.n_kv_head, hf.cfg.model.n_kv_head);
}

TEST(HfFamiliesF16, ExportRefusesAWeightPastFloat16sRange) {
    Imported hf(test::fixture("hf_llama_tiny"));
    hf.params.data()[hf.layout.at("h.1.mlp.c_proj.weight").offset + 5] = -7e4f;
    const std::string out = test::temp_dir("hf_fam_f16_big") + "/hf";
    try {
        write_hf_model(out, hf.cfg.model, hf.layout, hf.params.data(), {DType::f16, 0, 2});
        FAIL() << "a weight of -70000 was exported as f16";
    } catch (const InvalidInput& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("model.layers.1.mlp.down_proj.weight"), std::string::npos) << m;
        EXPECT_NE(m.find("65504"), std::string::npos) << m;
        EXPECT_NE(m.find("bf16"), std::string::npos) << m;
    }
    EXPECT_FALSE(fs::exists(out + "/model.safetensors"));
    // 65519.99 still rounds to 65504.
    hf.params.data()[hf.layout.at("h.1.mlp.c_proj.weight").offset + 5] = 65519.99f;
    write_hf_model(out, hf.cfg.model, hf.layout, hf.params.data(), {DType::f16, 0, 2});
    Imported back(out);
    EXPECT_EQ(back.params.data()[back.layout.at("h.1.mlp.c_proj.weight").offset + 5], 65504.f);
}

// A copy of a family fixture whose config.json `edit` changes; importing it must fail with an
// InvalidInput containing `message`.
void expect_import_refused(const char* fixture, const std::function<void(json&)>& edit,
                           const std::string& message) {
    const std::string dir = test::temp_dir("hf_fam_bad") + "/hf";
    fs::copy(test::fixture(fixture), dir, fs::copy_options::recursive);
    auto j = json::parse(test::read_file(dir + "/config.json"));
    edit(j);
    test::write_file(dir + "/config.json", j.dump(2));
    try {
        Imported hf(dir);
        ADD_FAILURE() << fixture << ": no error; expected one containing: " << message;
    } catch (const InvalidInput& e) {
        EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
}

TEST(HfFamiliesImport, RefusesWhatMeshlmDoesNotCompute) {
    expect_import_refused(
        "hf_llama_tiny", [](json& j) { j["rope_parameters"]["rope_type"] = "yarn"; },
        "rope_parameters.rope_type is \"yarn\"; meshlm computes RoPE scaling default, linear and "
        "llama3 only");
    expect_import_refused(
        "hf_llama_tiny_sharded",
        [](json& j) {
            j["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
        },
        "rope_scaling.type is \"dynamic\"");
    expect_import_refused(
        "hf_llama_tiny", [](json& j) { j["rope_parameters"].erase("low_freq_factor"); },
        "rope_parameters.low_freq_factor is missing");
    expect_import_refused(
        "hf_llama_tiny", [](json& j) { j["rope_parameters"]["partial_rotary_factor"] = 0.5; },
        "partial_rotary_factor is 0.5");
    expect_import_refused(
        "hf_llama_tiny", [](json& j) { j["hidden_act"] = "gelu_pytorch_tanh"; },
        "hidden_act \"gelu_pytorch_tanh\" is not supported");
    expect_import_refused(
        "hf_llama_tiny", [](json& j) { j["head_dim"] = 8; }, "head_dim is 8");
    expect_import_refused(
        "hf_llama_tiny", [](json& j) { j["pretraining_tp"] = 2; }, "pretraining_tp is 2");
    expect_import_refused(
        "hf_llama_tiny", [](json& j) { j["num_key_value_heads"] = 3; },
        "num_key_value_heads 3 does not divide num_attention_heads 4");
    // A window shorter than the context binds; the default (4096) when the field is absent.
    expect_import_refused(
        "hf_mistral_tiny",
        [](json& j) {
            j["sliding_window"] = 4096;
            j["max_position_embeddings"] = 32768;
        },
        "sliding_window is 4096");
    expect_import_refused(
        "hf_mistral_tiny",
        [](json& j) {
            j.erase("sliding_window");
            j["max_position_embeddings"] = 8192;
        },
        "sliding_window is 4096 (MistralConfig's default)");
    expect_import_refused(
        "hf_qwen2_tiny", [](json& j) { j["use_sliding_window"] = true; },
        "use_sliding_window is true");
    expect_import_refused(
        "hf_qwen2_tiny", [](json& j) { j["layer_types"][1] = "sliding_attention"; },
        "layer_types[1] is \"sliding_attention\"");
    expect_import_refused(
        "hf_gptj_tiny", [](json& j) { j["activation_function"] = "gelu_fast"; },
        "activation_function \"gelu_fast\" is not supported");
    expect_import_refused(
        "hf_gptj_tiny", [](json& j) { j["rotary_dim"] = nullptr; }, "rotary_dim is null");
    expect_import_refused(
        "hf_gptj_tiny", [](json& j) { j["rotary_dim"] = 20; }, "rotary_dim is 20");
    expect_import_refused(
        "hf_llama_tiny", [](json& j) { j["model_type"] = "bert"; },
        "model_type is \"bert\"; meshlm converts \"gpt2\", \"gptj\", \"llama\"");
    // A window that cannot bind is the full attention meshlm computes: accepted.
    const std::string dir = test::temp_dir("hf_fam_window") + "/hf";
    fs::copy(test::fixture("hf_mistral_tiny"), dir, fs::copy_options::recursive);
    auto j = json::parse(test::read_file(dir + "/config.json"));
    j["sliding_window"] = 128;
    test::write_file(dir + "/config.json", j.dump(2));
    EXPECT_NO_THROW(Imported{dir});
}

TEST(HfFamiliesImport, RefusesWeightsThatDoNotMatch) {
    // Qwen2's q/k/v biases missing: the file is not what config.json describes.
    const std::string dir = test::temp_dir("hf_fam_w") + "/hf";
    fs::copy(test::fixture("hf_qwen2_tiny"), dir, fs::copy_options::recursive);
    {
        SafetensorsFile f(dir + "/model.safetensors");
        std::vector<SafetensorsTensor> t;
        for (const auto& n : f.names())
            if (n != "model.layers.1.self_attn.k_proj.bias")
                t.push_back({n, f.entry(n).dtype, f.entry(n).shape, f.data(n)});
        write_safetensors(dir + "/model.safetensors.new", t, f.metadata());
        fs::rename(dir + "/model.safetensors.new", dir + "/model.safetensors");
    }
    EXPECT_THROW(
        {
            try {
                Imported hf(dir);
            } catch (const InvalidInput& e) {
                EXPECT_NE(std::string(e.what()).find(
                              "missing tensor 'model.layers.1.self_attn.k_proj.bias'"),
                          std::string::npos)
                    << e.what();
                throw;
            }
        },
        InvalidInput);
    // Llama with attention_bias true expects biases the file does not have.
    auto j = json::parse(test::read_file(test::fixture("hf_llama_tiny/config.json")));
    j["attention_bias"] = true;
    fs::copy(test::fixture("hf_llama_tiny"), dir + "2", fs::copy_options::recursive);
    test::write_file(dir + "2/config.json", j.dump(2));
    EXPECT_THROW(Imported{dir + "2"}, InvalidInput);
}

ModelConfig llama_like() {
    ModelConfig m;
    m.n_layer = 1;
    m.d_model = 16;
    m.n_head = 2;
    m.vocab_size = 300;
    m.max_seq_len = 32;
    m.norm = "rmsnorm";
    m.norm_bias = false;
    m.position = "rope";
    m.mlp = "swiglu";
    m.d_ff = 24;
    m.qkv_bias = m.proj_bias = m.mlp_bias = false;
    m.tied_head = false;
    return m;
}

void expect_export_refused(const ModelConfig& m, const std::vector<std::string>& messages) {
    try {
        hf_export_architecture(m);
        ADD_FAILURE() << "no error; expected: " << messages[0];
    } catch (const InvalidInput& e) {
        for (const auto& msg : messages)
            EXPECT_NE(std::string(e.what()).find(msg), std::string::npos) << e.what();
    }
}

TEST(HfFamiliesExport, RefusesModelsNoFamilyComputes) {
    EXPECT_EQ(hf_export_architecture(ModelConfig{}), "GPT2LMHeadModel");
    EXPECT_EQ(hf_export_architecture(llama_like()), "LlamaForCausalLM");
    ModelConfig m = ModelConfig{};
    m.position = "alibi";
    expect_export_refused(m, {"GPT2LMHeadModel: model.position is alibi (needs learned)",
                              "GPTJForCausalLM: model.block is sequential (needs parallel)",
                              "LlamaForCausalLM: model.norm is layernorm (needs rmsnorm)"});
    m = llama_like();
    m.mlp = "sqrelu";
    expect_export_refused(m, {"LlamaForCausalLM: model.mlp is sqrelu (needs swiglu or geglu)"});
    m = llama_like();
    m.qkv_bias = true;  // with no o_proj bias but an MLP bias: neither Llama nor Qwen2
    m.mlp_bias = true;
    expect_export_refused(m, {"LlamaForCausalLM: model.proj_bias is false (needs true)",
                              "Qwen2ForCausalLM: model.mlp_bias is true (needs false)"});
    m = llama_like();
    m.rope_dim = 4;
    expect_export_refused(m, {"model.rope_dim is 4 (needs 0, the whole head)"});
    m = llama_like();
    m.qkv_bias = true;
    EXPECT_EQ(hf_export_architecture(m), "Qwen2ForCausalLM");
    m = llama_like();
    m.qk_norm = true;
    expect_export_refused(m, {"model.qk_norm is true", "export needs model.qk_norm false"});
    m = llama_like();
    m.attn_act = "sqrelu";
    expect_export_refused(m, {"model.attn_act is sqrelu", "needs model.attn_act softmax"});
    m = ModelConfig{};
    m.position = "t5_bias";
    expect_export_refused(m, {"GPT2LMHeadModel: model.position is t5_bias (needs learned)",
                              "LlamaForCausalLM: model.norm is layernorm (needs rmsnorm)"});
    m = llama_like();
    m.logit_scale = 0.5f;
    expect_export_refused(m, {"model.logit_scale is 0.5", "export needs model.logit_scale 1"});
    m.logit_scale = 0.f;  // 1/sqrt(d_model): scales too
    expect_export_refused(m, {"model.logit_scale is 0", "export needs model.logit_scale 1"});
}

TEST(HfFamiliesImport, InitFromNamesTheArchitectureKeysThatDiffer) {
    // model.init_from needs the run's model to compute what the HF model computes.
    const ModelConfig hf = read_hf_config(test::fixture("hf_llama_tiny")).model;
    EXPECT_TRUE(hf_architecture_mismatch(hf, hf).empty());
    ModelConfig m = hf;
    m.norm = "layernorm";
    m.rope_scaling = "none";
    m.max_seq_len = 64;  // only a bound with rotary positions
    m.dropout_resid = 0.1f;
    EXPECT_EQ(hf_architecture_mismatch(hf, m),
              (std::vector<std::string>{
                  "model.norm is layernorm (the Hugging Face model has rmsnorm)",
                  "model.rope_scaling is none (the Hugging Face model has llama3)"}));
    m = hf;
    m.qk_norm = true;
    EXPECT_EQ(
        hf_architecture_mismatch(hf, m),
        (std::vector<std::string>{"model.qk_norm is true (the Hugging Face model has false)"}));
    m = hf;
    m.logit_scale = 0.25f;
    EXPECT_EQ(
        hf_architecture_mismatch(hf, m),
        (std::vector<std::string>{"model.logit_scale is 0.25 (the Hugging Face model has 1)"}));
}

test::CommandResult convert(const std::string& args) {
    return test::run_command(test::meshlm_binary() + " convert " + args);
}

// A Llama with GQA, llama3 RoPE and an untied head, vocab 300 (the byte tokenizer fits).
ModelConfig cli_llama() {
    ModelConfig m = llama_like();
    m.n_layer = 2;
    m.d_model = 32;
    m.n_head = 4;
    m.n_kv_head = 2;
    m.rope_base = 500000.f;
    m.rope_scaling = "llama3";
    m.rope_factor = 8.f;
    m.rope_original_max_seq = 16;
    return m;
}

// cli_llama() with weights of init seed `seed`, written as an HF directory.
void write_cli_llama(const std::string& dir, int seed, const HfExportOptions& opt) {
    const ModelConfig m = cli_llama();
    const ParamLayout layout = transformer_layout(m);
    Buffer<float> params(layout.total());
    init_params(m, layout, params.data(), seed);
    write_hf_model(dir, m, layout, params.data(), opt);
}

TEST(HfFamiliesCli, ConvertBothWays) {
    const std::string tmp = test::temp_dir("hf_fam_cli");
    const ModelConfig m = cli_llama();
    write_cli_llama(tmp + "/hf", 7, {});

    auto r = convert("--from hf --to meshlm " + tmp + "/hf " + tmp + "/run");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("LlamaForCausalLM: 2 layers"), std::string::npos) << r.output;
    // The run records the architecture through its model.* keys.
    Config cfg = load_config(tmp + "/run/config.yaml", {});
    EXPECT_EQ(model_yaml(cfg.model), model_yaml(m));
    r = test::run_command(test::meshlm_binary() + " sample --checkpoint " + tmp +
                          "/run --prompt ab --max-new-tokens 5 --temperature 0");
    EXPECT_EQ(r.exit_code, 0) << r.output;

    r = convert("--from meshlm --to hf --max-shard-size 20KB " + tmp + "/run " + tmp + "/hf2");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("as LlamaForCausalLM"), std::string::npos) << r.output;
    EXPECT_TRUE(fs::exists(tmp + "/hf2/model.safetensors.index.json"));
    expect_same_tensors(tmp + "/hf", tmp + "/hf2");
    auto j = json::parse(test::read_file(tmp + "/hf2/config.json"));
    EXPECT_EQ(j["eos_token_id"], 256);  // the byte tokenizer's end of text
    EXPECT_EQ(j["rope_scaling"]["rope_type"], "llama3");

    // The same run declared ALiBi (no position parameters either way) has no HF counterpart.
    std::string yaml = test::read_file(tmp + "/run/config.yaml");
    const std::string rope = "position: \"rope\"";
    const auto at = yaml.find(rope);
    ASSERT_NE(at, std::string::npos) << yaml;
    yaml.replace(at, rope.size(), "position: \"alibi\"");
    test::write_file(tmp + "/run/config.yaml", yaml);
    r = convert("--from meshlm --to hf " + tmp + "/run " + tmp + "/hf3");
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("LlamaForCausalLM: model.position is alibi (needs rope)"),
              std::string::npos)
        << r.output;
    EXPECT_FALSE(fs::exists(tmp + "/hf3"));
}

TEST(HfFamiliesCli, ConvertsFloat16BothWays) {
    const std::string tmp = test::temp_dir("hf_fam_cli_f16");
    write_cli_llama(tmp + "/hf", 9, {DType::f16, 0, -1});
    auto r = convert("--from hf --to meshlm " + tmp + "/hf " + tmp + "/run");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = convert("--from meshlm --to hf --dtype f16 " + tmp + "/run " + tmp + "/hf2");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("f16"), std::string::npos) << r.output;
    // The run holds the f16 values widened, so rounding them again gives the same file.
    EXPECT_EQ(test::read_file(tmp + "/hf2/model.safetensors"),
              test::read_file(tmp + "/hf/model.safetensors"));
    EXPECT_EQ(json::parse(test::read_file(tmp + "/hf2/config.json"))["dtype"], "float16");
    r = convert("--from meshlm --to hf --dtype f8 " + tmp + "/run " + tmp + "/hf3");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("f16"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(tmp + "/hf3"));
}

}  // namespace
}  // namespace meshlm

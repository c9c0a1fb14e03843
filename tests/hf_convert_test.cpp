// Hugging Face GPT-2 interop against transformers (fixtures by
// tools/reference/hf_gpt2_reference.py): an HF model imported into meshlm gives transformers'
// logits; a meshlm run exported to HF is the file transformers loaded and gave logits for; hf ->
// meshlm -> hf is lossless; bf16 exports round to nearest even; and `meshlm convert` refuses bad
// input with a clear message.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "meshlm/cli/config.h"
#include "meshlm/core/buffer.h"
#include "meshlm/core/threads.h"
#include "meshlm/io/hf_gpt2.h"
#include "meshlm/io/safetensors_set.h"
#include "meshlm/io/weights.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"
#include "test_util.h"

namespace meshlm {
namespace {

namespace fs = std::filesystem;

struct Logits {
    std::vector<std::int32_t> tokens;
    std::vector<float> values;  // (B*T, V)
    int B, T, V;
    std::map<std::string, std::string> metadata;
};

Logits read_logits(const std::string& path) {
    SafetensorsFile f(path);
    Logits r;
    r.tokens = f.i32("tokens");
    r.values = f.f32("logits");
    const Shape& s = f.entry("logits").shape;
    r.B = static_cast<int>(s[0]);
    r.T = static_cast<int>(s[1]);
    r.V = static_cast<int>(s[2]);
    r.metadata = f.metadata();
    return r;
}

// meshlm's logits for `tokens` (B, T) with params laid out by transformer_layout(cfg).
std::vector<float> meshlm_logits(const ModelConfig& cfg, const float* params,
                                 const std::vector<std::int32_t>& tokens, int B, int T) {
    set_thread_count(2);
    Transformer model(cfg, B, T);
    model.forward(params, tokens.data(), nullptr, B, T);
    return {model.logits(), model.logits() + static_cast<std::size_t>(B) * T * cfg.vocab_size};
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    double d = 0;
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
        d = std::max(d, std::fabs(double(a[i]) - b[i]));
    return d;
}

double max_abs(const std::vector<float>& a) {
    double m = 0;
    for (float v : a) m = std::max(m, std::fabs(double(v)));
    return m;
}

test::CommandResult convert(const std::string& args) {
    return test::run_command(test::meshlm_binary() + " convert " + args);
}

// An HF model directory read into meshlm params.
struct Imported {
    HfGpt2Config cfg;
    ParamLayout layout;
    Buffer<float> params;
    explicit Imported(const std::string& dir) : cfg(read_hf_gpt2_config(dir)) {
        layout = transformer_layout(cfg.model);
        params = Buffer<float>(layout.total());
        read_hf_gpt2_weights(dir, cfg, layout, params.data());
    }
    std::vector<float> slice(const std::string& name) const {
        const ParamSlice& s = layout.at(name);
        return {params.data() + s.offset, params.data() + s.offset + s.numel};
    }
};

// A copy of the HF fixture to break.
std::string hf_copy(const std::string& tag) {
    const std::string dir = test::temp_dir(tag) + "/hf";
    fs::copy(test::fixture("hf_gpt2_tiny"), dir, fs::copy_options::recursive);
    return dir;
}

void edit_config(const std::string& dir, const std::function<void(nlohmann::json&)>& edit) {
    auto j = nlohmann::json::parse(test::read_file(dir + "/config.json"));
    edit(j);
    test::write_file(dir + "/config.json", j.dump(2));
}

// Rewrites dir/model.safetensors keeping the tensors `keep` accepts, renamed by `rename`.
void edit_weights(const std::string& dir, const std::function<bool(const std::string&)>& keep,
                  const std::function<std::string(const std::string&)>& rename = nullptr) {
    SafetensorsFile f(dir + "/model.safetensors");
    std::vector<SafetensorsTensor> tensors;
    for (const auto& n : f.names())
        if (keep(n)) {
            const auto& e = f.entry(n);
            tensors.push_back({rename ? rename(n) : n, e.dtype, e.shape, f.data(n)});
        }
    write_safetensors(dir + "/model.safetensors.new", tensors, f.metadata());
    fs::rename(dir + "/model.safetensors.new", dir + "/model.safetensors");
}

TEST(HfConvert, ImportedModelGivesTransformersLogits) {
    Logits ref = read_logits(test::fixture("hf_gpt2_tiny_logits.safetensors"));
    Imported hf(test::fixture("hf_gpt2_tiny"));
    EXPECT_EQ(hf.cfg.model.n_layer, 2);
    EXPECT_EQ(hf.cfg.model.d_model, 32);
    EXPECT_EQ(hf.cfg.model.n_head, 4);
    EXPECT_EQ(hf.cfg.model.vocab_size, ref.V);
    EXPECT_EQ(hf.cfg.model.max_seq_len, 32);
    EXPECT_FLOAT_EQ(hf.cfg.model.norm_eps, 1e-5f);
    auto mine = meshlm_logits(hf.cfg.model, hf.params.data(), ref.tokens, ref.B, ref.T);
    const double d = max_abs_diff(mine, ref.values);
    std::printf("import: max |meshlm - transformers| = %.3g (logits up to %.3g)\n", d,
                max_abs(ref.values));
    EXPECT_LT(d, 1e-4);

    // Through the CLI: the run directory holds the same weights and loads as a run.
    const std::string run = test::temp_dir("hf_import") + "/run";
    auto r = convert("--from hf --to meshlm " + test::fixture("hf_gpt2_tiny") + " " + run);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    Config cfg = load_config(run + "/config.yaml", {});
    EXPECT_EQ(cfg.model.vocab_size, 300);
    EXPECT_EQ(cfg.data.tokenizer, "byte");
    Buffer<float> params(hf.layout.total());
    load_weights(run + "/model.safetensors", transformer_layout(cfg.model), params.data());
    EXPECT_EQ(meshlm_logits(cfg.model, params.data(), ref.tokens, ref.B, ref.T), mine);
    r = test::run_command(test::meshlm_binary() + " sample --checkpoint " + run +
                          " --prompt ab --max-new-tokens 5 --temperature 0");
    EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(HfConvert, ExportIsWhatTransformersLoaded) {
    Logits ref = read_logits(test::fixture("meshlm_tiny_run_hf_logits.safetensors"));
    const std::string run = test::fixture("meshlm_tiny_run");
    const std::string out = test::temp_dir("hf_export") + "/hf";
    auto r = convert("--from meshlm --to hf " + run + " " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // The byte tokenizer goes along as a tokenizer.json (hf_tokenizer_files_test.cpp).
    EXPECT_NE(r.output.find("tokenizer.json of the byte tokenizer written"), std::string::npos)
        << r.output;
    // Byte for byte the file transformers loaded when the fixture was made.
    auto sum = test::run_command("sha256sum " + out + "/model.safetensors");
    ASSERT_EQ(sum.exit_code, 0) << sum.output;
    EXPECT_EQ(sum.output.substr(0, 64), ref.metadata.at("model_sha256"));
    auto config = nlohmann::json::parse(test::read_file(out + "/config.json"));
    EXPECT_EQ(config["model_type"], "gpt2");
    EXPECT_EQ(config["architectures"][0], "GPT2LMHeadModel");
    EXPECT_EQ(config["eos_token_id"], 256);  // the byte tokenizer's end of text
    EXPECT_TRUE(config["n_inner"].is_null());

    // meshlm's logits on the original run equal transformers' on the export.
    Config cfg = load_config(run + "/config.yaml", {});
    const ParamLayout layout = transformer_layout(cfg.model);
    Buffer<float> params(layout.total());
    load_weights(run + "/model.safetensors", layout, params.data());
    auto mine = meshlm_logits(cfg.model, params.data(), ref.tokens, ref.B, ref.T);
    const double d = max_abs_diff(mine, ref.values);
    std::printf("export: max |meshlm - transformers| = %.3g (logits up to %.3g)\n", d,
                max_abs(ref.values));
    EXPECT_LT(d, 1e-4);
}

TEST(HfConvert, HfToMeshlmToHfIsLossless) {
    const std::string tmp = test::temp_dir("hf_roundtrip");
    const std::string src = test::fixture("hf_gpt2_tiny");
    ASSERT_EQ(convert("--from hf --to meshlm " + src + " " + tmp + "/run").exit_code, 0);
    auto r = convert("--from meshlm --to hf " + tmp + "/run " + tmp + "/hf");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    SafetensorsSet a(src), b(tmp + "/hf");
    ASSERT_EQ(a.names(), b.names());
    for (const auto& n : a.names()) {
        EXPECT_EQ(a.entry(n).dtype, DType::f32) << n;
        EXPECT_EQ(b.entry(n).dtype, DType::f32) << n;
        EXPECT_TRUE(a.entry(n).shape == b.entry(n).shape) << n;
        EXPECT_EQ(a.f32(n), b.f32(n)) << n;
    }
    auto ca = nlohmann::json::parse(test::read_file(src + "/config.json"));
    auto cb = nlohmann::json::parse(test::read_file(tmp + "/hf/config.json"));
    for (const char* k :
         {"n_layer", "n_embd", "n_head", "vocab_size", "n_positions", "layer_norm_epsilon",
          "initializer_range", "activation_function", "model_type", "tie_word_embeddings"})
        EXPECT_EQ(ca[k], cb[k]) << k;

    // Sharded: 50 KB shards, re-imported to the same weights.
    r = convert("--from meshlm --to hf --max-shard-size 50KB " + tmp + "/run " + tmp + "/sharded");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(fs::exists(tmp + "/sharded/model.safetensors.index.json"));
    EXPECT_FALSE(fs::exists(tmp + "/sharded/model.safetensors"));
    SafetensorsSet c(tmp + "/sharded");
    EXPECT_GT(c.files().size(), 2u);
    for (const auto& n : a.names()) EXPECT_EQ(a.f32(n), c.f32(n)) << n;
    ASSERT_EQ(convert("--from hf --to meshlm " + tmp + "/sharded " + tmp + "/run2").exit_code, 0);
    EXPECT_EQ(test::read_file(tmp + "/run/model.safetensors"),
              test::read_file(tmp + "/run2/model.safetensors"));
}

TEST(HfConvert, AcceptsBareNamesAndMaskBuffers) {
    // Older files: no `transformer.` prefix, attention-mask buffers, an explicit tied head.
    const std::string dir = hf_copy("hf_bare");
    Imported ref(test::fixture("hf_gpt2_tiny"));
    {
        SafetensorsFile f(dir + "/model.safetensors");
        std::vector<SafetensorsTensor> t;
        for (const auto& n : f.names())
            t.push_back({n.substr(std::string("transformer.").size()), f.entry(n).dtype,
                         f.entry(n).shape, f.data(n)});
        std::vector<float> mask(32 * 32, 1.f), masked_bias{-1e4f};
        t.push_back({"h.0.attn.bias", DType::f32, {1, 1, 32, 32}, mask.data()});
        t.push_back({"h.0.attn.masked_bias", DType::f32, {}, masked_bias.data()});
        const auto& wte = f.entry("transformer.wte.weight");
        t.push_back({"lm_head.weight", DType::f32, wte.shape, f.data("transformer.wte.weight")});
        write_safetensors(dir + "/model.safetensors", t);
    }
    edit_config(dir, [](nlohmann::json& j) { j["tie_word_embeddings"] = false; });
    Imported bare(dir);
    for (const auto& s : ref.layout.slices()) EXPECT_EQ(bare.slice(s.name), ref.slice(s.name));
}

TEST(HfConvert, Bf16ExportRoundsToNearestEven) {
    const std::string run = test::fixture("meshlm_tiny_run");
    const std::string tmp = test::temp_dir("hf_bf16");
    auto r = convert("--from meshlm --to hf --dtype bf16 " + run + " " + tmp + "/hf");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    SafetensorsSet set(tmp + "/hf");
    for (const auto& n : set.names()) EXPECT_EQ(set.entry(n).dtype, DType::bf16) << n;
    auto config = nlohmann::json::parse(test::read_file(tmp + "/hf/config.json"));
    EXPECT_EQ(config["dtype"], "bfloat16");

    Config cfg = load_config(run + "/config.yaml", {});
    const ParamLayout layout = transformer_layout(cfg.model);
    Buffer<float> orig(layout.total());
    load_weights(run + "/model.safetensors", layout, orig.data());
    Imported back(tmp + "/hf");
    for (const auto& s : layout.slices()) {
        auto got = back.slice(s.name);
        for (std::size_t i = 0; i < s.numel; ++i)
            ASSERT_EQ(got[i], f32_from_bf16(bf16_from_f32(orig.data()[s.offset + i])))
                << s.name << "[" << i << "]";
    }
    // bf16 keeps 8 significant bits: every weight moves by at most 2^-9 of itself. To first
    // order a logit moves by the sum of those relative errors along its products: the two
    // wte factors, plus per block ~6 rounded factors (LayerNorm gains, q/k/v, projections,
    // MLP) = 14 here, so |dlogit| <~ 14 * 2^-9 * |logit scale| ~ 2.7%. Assert 4% of max |logit|.
    Logits ref = read_logits(test::fixture("meshlm_tiny_run_hf_logits.safetensors"));
    auto full = meshlm_logits(cfg.model, orig.data(), ref.tokens, ref.B, ref.T);
    auto half = meshlm_logits(cfg.model, back.params.data(), ref.tokens, ref.B, ref.T);
    const double d = max_abs_diff(half, full), scale = max_abs(full);
    std::printf("bf16: max |logit change| = %.3g = %.2f%% of max |logit| %.3g\n", d,
                100 * d / scale, scale);
    EXPECT_LT(d, 0.04 * scale);
}

TEST(HfConvert, TokenizerJsonTravelsBothWays) {
    // An HF model whose vocabulary is a 400-token tokenizer.json.
    const std::string tmp = test::temp_dir("hf_tok");
    const std::string tok = test::fixture("tokenizers/bpe_trained.json");
    ModelConfig m;
    m.n_layer = 1;
    m.d_model = 16;
    m.n_head = 2;
    m.vocab_size = 400;
    m.max_seq_len = 16;
    const ParamLayout layout = transformer_layout(m);
    Buffer<float> params(layout.total());
    init_params(m, layout, params.data(), 5);
    write_hf_gpt2(tmp + "/hf", m, layout, params.data(), {});
    fs::copy_file(tok, tmp + "/hf/tokenizer.json");
    auto r = convert("--from hf --to meshlm " + tmp + "/hf " + tmp + "/run");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(test::read_file(tmp + "/run/tokenizer.json"), test::read_file(tok));
    Config cfg = load_config(tmp + "/run/config.yaml", {});
    EXPECT_EQ(fs::path(cfg.data.tokenizer).filename(), "tokenizer.json");
    r = test::run_command(test::meshlm_binary() + " sample --checkpoint " + tmp +
                          "/run --prompt hello --max-new-tokens 3 --seed 1");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    r = convert("--from meshlm --to hf " + tmp + "/run " + tmp + "/hf2");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(test::read_file(tmp + "/hf2/tokenizer.json"), test::read_file(tok));
    auto config = nlohmann::json::parse(test::read_file(tmp + "/hf2/config.json"));
    EXPECT_EQ(config["eos_token_id"], 0);  // <|endoftext|> of bpe_trained.json
    // A tokenizer bigger than the model's vocabulary is refused.
    r = convert("--from hf --to meshlm --tokenizer " + tok + " " + test::fixture("hf_gpt2_tiny") +
                " " + tmp + "/bad");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("has 400 tokens but the model's vocab_size is 300"), std::string::npos)
        << r.output;
}

// Runs an hf -> meshlm conversion of `dir` expected to fail with `message`, leaving no OUT.
void expect_refused(const std::string& dir, const std::string& message) {
    const std::string out = fs::path(dir).parent_path().string() + "/out";
    auto r = convert("--from hf --to meshlm " + dir + " " + out);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(out));
    for (const auto& e : fs::directory_iterator(fs::path(dir).parent_path()))
        EXPECT_EQ(e.path().filename().string().find(".out.convert"), std::string::npos);
}

TEST(HfConvert, RefusesBadInput) {
    {  // not a directory / no config.json / foreign JSON
        const std::string tmp = test::temp_dir("hf_bad_dir");
        expect_refused(tmp + "/nothing", "is not a directory");
        fs::create_directories(tmp + "/empty");
        expect_refused(tmp + "/empty", "has no config.json");
        test::write_file(tmp + "/foreign/config.json", R"({"name": "not a model", "x": [1, 2]})");
        expect_refused(tmp + "/foreign", "config.json: no \"model_type\"");
        test::write_file(tmp + "/bert/config.json", R"({"model_type": "bert"})");
        expect_refused(tmp + "/bert", "model_type is \"bert\"; meshlm converts \"gpt2\", ");
        test::write_file(tmp + "/broken/config.json", R"({"model_type": )");
        expect_refused(tmp + "/broken", "config.json: not valid JSON");
    }
    {  // unsupported config fields
        auto refused_with = [](const char* key, nlohmann::json value, const std::string& msg) {
            const std::string dir = hf_copy("hf_bad_cfg");
            edit_config(dir, [&](nlohmann::json& j) { j[key] = value; });
            expect_refused(dir, msg);
        };
        refused_with("activation_function", "relu",
                     "activation_function \"relu\" is not supported");
        refused_with("n_inner", 100, "n_inner is 100; meshlm's MLP width is 4 * n_embd = 128");
        refused_with("scale_attn_weights", false, "scale_attn_weights is false");
        refused_with("scale_attn_by_inverse_layer_idx", true, "scale_attn_by_inverse_layer_idx");
        refused_with("add_cross_attention", true, "add_cross_attention is true");
        refused_with("n_head", 5, "n_head 5 does not divide n_embd 32");
        refused_with("n_layer", "two", "\"n_layer\" is \"two\"; expected an integer >= 1");
        refused_with("n_layer", 3, "missing tensor 'transformer.h.2.ln_1.weight'");
        refused_with("n_embd", 64, "has shape [300, 32] but config.json implies [300, 64]");
        refused_with("tie_word_embeddings", false,
                     "tie_word_embeddings false but there is no "
                     "lm_head.weight");
    }
    {  // missing, extra, duplicated, truncated weights
        std::string dir = hf_copy("hf_missing");
        edit_weights(dir,
                     [](const std::string& n) { return n != "transformer.h.1.mlp.c_fc.bias"; });
        expect_refused(dir, "missing tensor 'transformer.h.1.mlp.c_fc.bias'");
        dir = hf_copy("hf_extra");
        edit_weights(
            dir, [](const std::string&) { return true; },
            [](const std::string& n) { return n == "transformer.ln_f.bias" ? "score.weight" : n; });
        expect_refused(dir, "unexpected tensor 'score.weight'");
        dir = hf_copy("hf_twice");
        {
            SafetensorsFile f(dir + "/model.safetensors");
            std::vector<SafetensorsTensor> t;
            for (const auto& n : f.names())
                t.push_back({n, f.entry(n).dtype, f.entry(n).shape, f.data(n)});
            t.push_back({"wpe.weight", f.entry("transformer.wpe.weight").dtype,
                         f.entry("transformer.wpe.weight").shape,
                         f.data("transformer.wpe.weight")});
            write_safetensors(dir + "/model.safetensors", t);
        }
        expect_refused(dir, "tensor 'wpe.weight' is stored twice");
        dir = hf_copy("hf_trunc");
        fs::resize_file(dir + "/model.safetensors",
                        fs::file_size(dir + "/model.safetensors") - 100);
        expect_refused(dir, "model.safetensors: tensor");
        expect_refused(dir, "truncated file?");
        dir = hf_copy("hf_noweights");
        fs::remove(dir + "/model.safetensors");
        expect_refused(dir, "holds neither model.safetensors nor model.safetensors.index.json");
    }
    {  // OUT not empty; --force replaces it
        const std::string tmp = test::temp_dir("hf_force");
        test::write_file(tmp + "/out/keep.txt", "x");
        const std::string src = test::fixture("hf_gpt2_tiny");
        auto r = convert("--from hf --to meshlm " + src + " " + tmp + "/out");
        EXPECT_NE(r.exit_code, 0);
        EXPECT_NE(r.output.find("exists and is not empty; pass --force"), std::string::npos)
            << r.output;
        EXPECT_TRUE(fs::exists(tmp + "/out/keep.txt"));
        r = convert("--from hf --to meshlm --force " + src + " " + tmp + "/out");
        EXPECT_EQ(r.exit_code, 0) << r.output;
        EXPECT_FALSE(fs::exists(tmp + "/out/keep.txt"));
        EXPECT_TRUE(fs::exists(tmp + "/out/model.safetensors"));
        // Bad flags.
        r = convert("--from meshlm --to hf --max-shard-size 5XB " + tmp + "/out " + tmp + "/hf");
        EXPECT_NE(r.exit_code, 0);
        EXPECT_NE(r.output.find("--max-shard-size '5XB' is not a size"), std::string::npos)
            << r.output;
        r = convert("--from meshlm --to hf " + src + " " + tmp + "/hf");
        EXPECT_NE(r.exit_code, 0);
        EXPECT_NE(r.output.find("is not a run or checkpoint directory"), std::string::npos)
            << r.output;
        r = convert("--from hf --to meshlm --dtype bf16 " + src + " " + tmp + "/x");
        EXPECT_NE(r.exit_code, 0);
        EXPECT_NE(r.output.find("meshlm run directories hold f32 weights"), std::string::npos)
            << r.output;
    }
}

}  // namespace
}  // namespace meshlm

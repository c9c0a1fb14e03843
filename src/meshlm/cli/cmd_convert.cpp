// meshlm convert --from hf --to meshlm IN OUT   (HF causal-LM directory -> run directory)
// meshlm convert --from meshlm --to hf IN OUT   (run directory -> HF causal-LM directory)
//
// The families and their mapping are io/hf_model.h's; the run directory records the architecture
// as its model.* keys. The tokenizer files (tokenizer.json, tokenizer_config.json with the chat
// template, special_tokens_map.json, generation_config.json) go both ways
// (io/hf_tokenizer_files.h); a byte-level run exports the byte tokenizer as a tokenizer.json,
// which an import recognises as the byte tokenizer again.
//
// OUT is built in a hidden sibling directory and renamed into place at the end, so a failure
// leaves nothing half-written; an existing non-empty OUT is replaced only with --force.
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "meshlm/cli/commands.h"
#include "meshlm/cli/config.h"
#include "meshlm/cli/hf_export.h"
#include "meshlm/cli/model_match.h"
#include "meshlm/cli/overrides.h"
#include "meshlm/cli/run_config.h"
#include "meshlm/cli/run_dir.h"
#include "meshlm/cli/staging_dir.h"
#include "meshlm/core/atomic_file.h"
#include "meshlm/core/buffer.h"
#include "meshlm/core/byte_size.h"
#include "meshlm/core/error.h"
#include "meshlm/data/byte_tokenizer_json.h"
#include "meshlm/data/tokenizer.h"
#include "meshlm/io/hf_model.h"
#include "meshlm/io/hf_tokenizer_files.h"
#include "meshlm/io/weights.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"

namespace fs = std::filesystem;

namespace meshlm {

namespace {

struct ConvertArgs {
    std::string from, to, in, out, dtype = "f32", max_shard_size = "5GB", tokenizer;
    bool force = false;
};

// Which tokenizer the imported run uses: --tokenizer, else IN/tokenizer.json, else byte.
std::string choose_tokenizer(const ConvertArgs& a, const ModelConfig& m) {
    std::string spec = a.tokenizer;
    if (spec.empty())
        spec = fs::exists(a.in + "/tokenizer.json") ? a.in + "/tokenizer.json" : "byte";
    if (spec == "byte" && a.tokenizer.empty() && m.vocab_size < 257) {
        std::string legacy = fs::exists(a.in + "/vocab.json") && fs::exists(a.in + "/merges.txt")
                                 ? " (vocab.json + merges.txt are not read; save the tokenizer "
                                   "with a recent `tokenizers` to get a tokenizer.json)"
                                 : "";
        MESHLM_INVALID(a.in, " has no tokenizer.json", legacy, " and its vocab_size ", m.vocab_size,
                       " is too small for the byte tokenizer (257); pass --tokenizer FILE");
    }
    // An export of a byte-level meshlm model: its tokenizer.json is the byte tokenizer's.
    if (spec.ends_with(".json") && is_byte_tokenizer_json(spec)) spec = "byte";
    auto tok = make_tokenizer(spec);
    if (tok->vocab_size() > m.vocab_size)
        MESHLM_INVALID("tokenizer ", spec, " has ", tok->vocab_size(),
                       " tokens but the model's vocab_size is ", m.vocab_size);
    return spec;
}

// "; also copied: tokenizer_config.json, ..." for the summary line ("" for none).
std::string side_files_note(const std::vector<std::string>& names) {
    std::string s;
    for (const std::string& n : names) s += (s.empty() ? "; also copied: " : ", ") + n;
    return s;
}

// The imported run's config with the command line's overrides, which may change anything but
// what the weights compute.
Config with_overrides(const Config& c, const std::string& staged_yaml, const std::string& in,
                      const std::vector<std::string>& overrides) {
    if (overrides.empty()) return c;
    write_file_atomic(staged_yaml, config_to_yaml(c));
    Config o = load_config(staged_yaml, overrides);
    require_same_model(c, o, in + " (its config.json)");
    o.name = c.name;
    return o;
}

int convert_hf_to_meshlm(const ConvertArgs& a, const std::vector<std::string>& overrides) {
    if (a.dtype != "f32")
        MESHLM_INVALID("--dtype ", a.dtype, ": meshlm run directories hold f32 weights");
    const HfModelConfig hf = read_hf_config(a.in);
    const ParamLayout layout = transformer_layout(hf.model);
    Buffer<float> params(layout.total());
    read_hf_weights(a.in, hf, layout, params.data());
    const std::string tok_spec = choose_tokenizer(a, hf.model);

    StagingDir out(a.out, a.force, "convert");
    Config c;
    c.name = fs::path(out.final_path()).filename().string();
    c.model = hf.model;
    c.train.seq_len = std::min(c.train.seq_len, c.model.max_seq_len);
    c.data.tokenizer = "byte";
    if (tok_spec != "byte") {
        // The run keeps its own copy, found by file name (as `meshlm train` does).
        const std::string name = fs::path(tok_spec).filename().string();
        fs::copy_file(tok_spec, out.path() + "/" + name);
        c.data.tokenizer = out.final_path() + "/" + name;
    }
    // The chat template, special tokens and generation config travel with the run.
    const std::vector<std::string> side = copy_hf_tokenizer_files(a.in, out.path());
    c = with_overrides(c, out.path() + "/config.yaml", a.in, overrides);
    make_paths_absolute(c);
    write_file_atomic(out.path() + "/config.yaml", config_to_yaml(c));
    load_config(out.path() + "/config.yaml", {});  // what sample / eval will read must load
    save_weights(out.path() + "/model.safetensors", layout, params.data(),
                 {{"converted_from", "huggingface " + hf.model_type}});
    out.publish();
    std::printf(
        "converted %s (%s: %d layers, width %d, %d heads, vocab %d, context %d, %zu "
        "parameters) to the meshlm run directory %s; tokenizer: %s%s\n",
        a.in.c_str(), hf.architecture.c_str(), hf.model.n_layer, hf.model.d_model, hf.model.n_head,
        hf.model.vocab_size, hf.model.max_seq_len, layout.count(), out.final_path().c_str(),
        c.data.tokenizer.c_str(), side_files_note(side).c_str());
    return 0;
}

int convert_meshlm_to_hf(const ConvertArgs& a, const std::vector<std::string>& overrides) {
    if (!a.tokenizer.empty())
        MESHLM_INVALID("--tokenizer applies to --to meshlm; an export takes the run's tokenizer");
    HfExportOptions opt;
    if (a.dtype == "bf16")
        opt.dtype = DType::bf16;
    else if (a.dtype == "f16")
        opt.dtype = DType::f16;
    else if (a.dtype != "f32")
        MESHLM_INVALID("--dtype ", a.dtype, ": expected f32, bf16 or f16");
    opt.max_shard_bytes = parse_byte_size(a.max_shard_size, "--max-shard-size");
    // Model keys that leave the weights' meaning alone (dropout rates) reach the export.
    require_used_overrides(overrides, "meshlm convert --to hf", {"model.", "data.tokenizer"});
    RunDir run = open_run_dir(a.in, overrides);
    const ParamLayout layout = transformer_layout(run.config.model);
    Buffer<float> params(layout.total());
    load_run_weights(run, layout, params.data());

    StagingDir out(a.out, a.force, "convert");
    std::string tok_note;
    const HfExport ex = export_hf_dir(out.path(), run, params.data(), opt, tok_note);
    out.publish();
    std::printf(
        "exported %s to %s as %s: config.json, generation_config.json, %zu weight file%s (%s, "
        "%zu parameters); %s\n",
        a.in.c_str(), out.final_path().c_str(), ex.architecture.c_str(), ex.files.size(),
        ex.files.size() == 1 ? "" : "s", a.dtype.c_str(), layout.count(), tok_note.c_str());
    return 0;
}

}  // namespace

CommandRunner add_convert_command(CLI::App& app, const std::vector<std::string>& overrides) {
    auto* cmd = app.add_subcommand(
        "convert",
        "Convert between meshlm run directories and Hugging Face directories (GPT-2, GPT-J, "
        "Llama, Mistral, Qwen2)");
    auto a = std::make_shared<ConvertArgs>();
    cmd->add_option("--from", a->from, "source format")
        ->required()
        ->check(CLI::IsMember({"hf", "meshlm"}));
    cmd->add_option("--to", a->to, "target format")
        ->required()
        ->check(CLI::IsMember({"hf", "meshlm"}));
    cmd->add_option("IN", a->in, "source directory")->required();
    cmd->add_option("OUT", a->out, "directory to create")->required();
    cmd->add_option("--dtype", a->dtype, "weight dtype of an HF export: f32, bf16 or f16")
        ->capture_default_str()
        ->check(CLI::IsMember({"f32", "bf16", "f16"}));
    cmd->add_option("--max-shard-size", a->max_shard_size,
                    "HF export: shard model.safetensors above this size (e.g. 5GB, 500MB; 0 = "
                    "never)")
        ->capture_default_str();
    cmd->add_option("--tokenizer", a->tokenizer,
                    "HF import: tokenizer for the run (byte or a file; default IN/tokenizer.json "
                    "when present, else byte)");
    cmd->add_flag("--force", a->force, "replace a non-empty OUT");
    return [a, &overrides] {
        if (a->from == a->to) MESHLM_INVALID("--from and --to are both ", a->from);
        check_config_overrides(overrides);
        return a->from == "hf" ? convert_hf_to_meshlm(*a, overrides)
                               : convert_meshlm_to_hf(*a, overrides);
    };
}

}  // namespace meshlm

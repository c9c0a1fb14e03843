// meshlm eval --checkpoint RUN_DIR --split {val,test}: mean loss, perplexity and bits per byte
// of a run's final weights (--weights avg: its averaged ones) on a split of its prepared data
// (the seeds' validation / test modes).
// meshlm eval --checkpoint RUN_DIR --tasks FILE... [--output results.json]: zero-shot accuracy
// on JSONL task files (infer/task_eval.h), as a table and as JSON.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "meshlm/cli/commands.h"
#include "meshlm/cli/overrides.h"
#include "meshlm/cli/run_dir.h"
#include "meshlm/cli/validators.h"
#include "meshlm/core/error.h"
#include "meshlm/core/threads.h"
#include "meshlm/data/data_source.h"
#include "meshlm/data/loader.h"
#include "meshlm/data/prepare.h"
#include "meshlm/infer/task_eval.h"
#include "meshlm/io/weights.h"
#include "meshlm/kernels/device_buffer.h"
#include "meshlm/kernels/ops/run_device.h"
#include "meshlm/model/transformer_layout.h"
#include "meshlm/train/chunked_losses.h"
#include "meshlm/train/evaluate.h"

#include <iostream>

namespace meshlm {

namespace {
struct EvalArgs {
    std::string device = "auto";  // kernels::resolve_run_device
    std::string checkpoint, split = "val";
    int batch_size = 0, threads = 0, seq_len = 0;
    std::vector<std::string> tasks;
    std::string output;
    int max_length = 0, max_rows = 512;
    std::string weights = "final";  // final | avg
};

// The weights --weights names: the run's (final, or its latest checkpoint's) or, for avg, the
// mean train.average wrote beside them.
void load_eval_weights(const EvalArgs& a, const RunDir& run, const ParamLayout& layout,
                       float* params) {
    if (a.weights != "avg") return load_run_weights(run, layout, params);
    if (std::filesystem::exists(a.checkpoint + "/trainer.json"))
        MESHLM_INVALID("--weights avg reads a run directory's model.avg.safetensors, but ",
                       a.checkpoint, " is a checkpoint: give its run directory");
    const std::string path = a.checkpoint + "/model.avg.safetensors";
    if (!std::filesystem::exists(path))
        MESHLM_INVALID("--weights avg: ", path,
                       " does not exist (a run writes it when train.average.every > 0)");
    load_weights(path, layout, params);
}

// Zero-shot tasks: every file's requests go through one engine, batched by it.
int run_tasks(const EvalArgs& a, const RunDir& run) {
    const ModelConfig& cfg = run.config.model;
    std::vector<Task> tasks;
    for (const std::string& f : a.tasks) tasks.push_back(load_task(f));
    Buffer<float> params(transformer_layout(cfg).total());
    load_eval_weights(a, run, transformer_layout(cfg), params.data());
    EngineOptions eo;
    eo.max_running = 64;
    eo.max_waiting = 1 << 16;
    eo.max_rows = a.max_rows;
    const int max_length = a.max_length > 0 ? a.max_length : cfg.max_seq_len - 1;
    if (max_length > cfg.max_seq_len)
        MESHLM_INVALID("--max-length ", max_length, " exceeds the model's context ",
                       cfg.max_seq_len);
    eo.device = run_device(run, a.device);
    Engine engine(cfg, params.data(), *run.tokenizer, eo);
    const bool tty = isatty(STDERR_FILENO);
    nlohmann::json out = {{"checkpoint", a.checkpoint}, {"max_length", max_length}};
    std::vector<TaskResult> results;
    for (const Task& t : tasks) {
        int last = -1;
        auto progress = [&](int done, int total) {
            const int pct = static_cast<int>(100L * done / total);
            if (pct == last && done != total) return;
            last = pct;
            const int w = 30, fill = static_cast<int>(static_cast<long>(w) * done / total);
            std::fprintf(stderr, "%s%-16s [%s%s] %d/%d%s", tty ? "\r" : "", t.name.c_str(),
                         std::string(fill, '#').c_str(), std::string(w - fill, ' ').c_str(), done,
                         total, tty && done != total ? "" : "\n");
            std::fflush(stderr);
        };
        results.push_back(
            evaluate_task(engine, *run.tokenizer, t, max_length,
                          tty ? progress : std::function<void(int, int)>([&](int d, int n) {
                              if (d == n) progress(d, n);
                          })));
    }
    std::printf("| %-20s | %-15s | %6s | %-10s | %10s |\n", "task", "kind", "n", "metric", "value");
    std::printf("|%s|%s|%s|%s|%s|\n", std::string(22, '-').c_str(), std::string(17, '-').c_str(),
                std::string(8, '-').c_str(), std::string(12, '-').c_str(),
                std::string(12, '-').c_str());
    for (const TaskResult& r : results) {
        auto row = [&](const char* metric, double v) {
            std::printf("| %-20s | %-15s | %6d | %-10s | %10.4f |\n", r.name.c_str(),
                        r.kind.c_str(), r.n, metric, v);
        };
        nlohmann::json j = {{"kind", r.kind}, {"n", r.n}, {"acc", r.acc}};
        row("acc", r.acc);
        if (r.kind == "multiple_choice") {
            row("acc_norm", r.acc_norm);
            j["acc_norm"] = r.acc_norm;
        } else {
            row("perplexity", r.perplexity);
            j["perplexity"] = r.perplexity;
        }
        out["results"][r.name] = j;
        nlohmann::json samples = nlohmann::json::array();
        for (int i = 0; i < r.n; ++i)
            samples.push_back({{"index", i},
                               {"pred", r.pred[i]},
                               {"pred_norm", r.pred_norm[i]},
                               {"loglikelihoods", r.lls[i]}});
        out["samples"][r.name] = samples;
    }
    if (!a.output.empty()) {
        std::ofstream f(a.output);
        f << out.dump(2) << "\n";
        if (!f) MESHLM_INVALID("cannot write ", a.output);
        std::fprintf(stderr, "results written to %s\n", a.output.c_str());
    }
    return 0;
}

// The options of `meshlm eval` into a.
void add_eval_options(CLI::App* cmd, EvalArgs& a) {
    cmd->add_option("--checkpoint", a.checkpoint, "run directory written by `meshlm train`")
        ->required();
    auto* split = cmd->add_option("--split", a.split, "split of the run's data")
                      ->capture_default_str()
                      ->check(CLI::IsMember({"val", "test", "train"}));
    cmd->add_option("--tasks", a.tasks,
                    "zero-shot JSONL task files (last word or multiple choice; see README)")
        ->excludes(split)
        ->check(CLI::ExistingFile);
    cmd->add_option("--output", a.output, "with --tasks: write the results as JSON here");
    cmd->add_option("--max-length", a.max_length,
                    "with --tasks: tokens per scored sequence (0 = the context - 1), longer "
                    "ones keep their end")
        ->check(at_least(0));
    cmd->add_option("--max-rows", a.max_rows, "with --tasks: tokens per forward pass")
        ->capture_default_str()
        ->check(in_range(1, 65536));
    cmd->add_option("--batch-size", a.batch_size, "rows per batch (0 = the run's batch size)")
        ->check(at_least(0));
    cmd->add_option("--seq-len", a.seq_len,
                    "tokens per row (0 = the run's train.seq_len); up to model.max_seq_len")
        ->check(at_least(0));
    cmd->add_option("--weights", a.weights,
                    "final: the run's model.safetensors (an unfinished run: its latest "
                    "checkpoint); avg: its model.avg.safetensors (train.average)")
        ->capture_default_str()
        ->check(CLI::IsMember({"final", "avg"}));
    cmd->add_option("--threads", a.threads, "threads (0 = all cores)")->capture_default_str();
    cmd->add_option("--device", a.device,
                    "where the model runs: cpu, cuda (one GPU; Transformer-VQ and T5-bias models "
                    "are refused by name) or auto (cuda when built in, a GPU is visible and the "
                    "model runs there; else the CPU)")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
}

// The loss, perplexity and bits per byte of the run's weights on a split of its data.
int run_split(const EvalArgs& a, const RunDir& run) {
    const Config& cfg = run.config;
    if (cfg.data.synthetic)
        MESHLM_INVALID(a.checkpoint,
                       " was trained on synthetic data: there is no split to "
                       "evaluate");
    use_inference_threads(a.threads);
    DataConfig data = cfg.data;
    data.tokenizer = run.tokenizer_spec;
    const std::string dir = resolve_prepared_data(data, *run.tokenizer, std::cerr);
    PreparedMeta meta = read_prepared_meta(dir);
    if (meta.splits[a.split].tokens == 0)
        MESHLM_INVALID("the ", a.split, " split of ", dir, " is empty (prepare with a non-zero --",
                       a.split == "test" ? "test" : "val", "-fraction)");
    const int B = a.batch_size > 0 ? a.batch_size : cfg.train.batch_size;
    const int T = a.seq_len > 0 ? a.seq_len : cfg.train.seq_len;
    if (T > cfg.model.max_seq_len)
        MESHLM_INVALID("--seq-len ", T,
                       " exceeds the model's context model.max_seq_len = ", cfg.model.max_seq_len,
                       cfg.model.position == "learned"
                           ? " (learned positions have no row beyond it)"
                           : " (raise it with --config.model.max_seq_len at training time)");
    LoaderOptions opt;
    opt.packing = parse_packing(cfg.data.packing);
    opt.seq_len = T;
    opt.shuffle = false;
    auto loader = DataLoader::open_split(dir, a.split, opt);
    // Transformer-VQ with model.vq.update_len: activations for a chunk, the rest of the row
    // carried in the attention state (as it trained).
    const int U = cfg.model.chunk_len(T);
    const Device device = run_device(run, a.device);
    Transformer model(for_inference(cfg.model), B, U, nullptr, Recompute::none, Precision::fp32,
                      device);
    const std::size_t n = model.layout().total();
    Buffer<float> params(n);
    load_eval_weights(a, run, model.layout(), params.data());
    kernels::FloatArray on_device(device, device == Device::cpu ? 0 : n);
    if (device != Device::cpu)
        kernels::copy(flat(on_device.data(), n, device), flat(params.data(), n, Device::cpu));
    const float* weights = device == Device::cpu ? params.data() : on_device.data();
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(B) * T), targets(tokens.size());
    BatchLosses losses = [&](const std::int32_t* tk, const std::int32_t* tg, int rows, int t) {
        if (rows == 0) return static_cast<const float*>(nullptr);
        model.forward(weights, tk, tg, rows, t);
        return model.losses();
    };
    if (U < T) losses = ChunkedLosses(model, U, losses);
    EvalResult r =
        evaluate(losses, *loader, B, T, 0, token_byte_lengths(*run.tokenizer, cfg.model.vocab_size),
                 tokens.data(), targets.data());
    std::printf(
        "split %s: %llu tokens (%llu bytes) | loss %.6f nats/token | perplexity %.4f "
        "| %.6f bits/byte\n",
        a.split.c_str(), static_cast<unsigned long long>(r.tokens),
        static_cast<unsigned long long>(r.bytes), r.loss(), r.perplexity(), r.bits_per_byte());
    return 0;
}

int run_eval(const EvalArgs& a, const std::vector<std::string>& overrides) {
    // A CPU build or a machine without a GPU is refused before the run is read.
    kernels::resolve_run_device(a.device, "--device", "");
    // The data to score and the default batch shape; the model is the run's.
    require_used_overrides(overrides, "meshlm eval",
                           {"data.", "train.batch_size", "train.seq_len"});
    RunDir run = open_run_dir(a.checkpoint, overrides);
    if (!a.tasks.empty()) {
        use_inference_threads(a.threads);
        return run_tasks(a, run);
    }
    return run_split(a, run);
}

}  // namespace

CommandRunner add_eval_command(CLI::App& app, const std::vector<std::string>& overrides) {
    auto* cmd = app.add_subcommand(
        "eval", "Loss, perplexity and bits per byte on a data split, or zero-shot task accuracy");
    auto a = std::make_shared<EvalArgs>();
    add_eval_options(cmd, *a);
    return [a, &overrides] { return run_eval(*a, overrides); };
}

}  // namespace meshlm

// meshlm info [--config FILE]: parameter count, training FLOPs per token and the planned
// memory of a config, without allocating it.
#include <algorithm>
#include <cstdio>

#include "meshlm/cli/commands.h"
#include "meshlm/cli/config.h"
#include "meshlm/cli/run_config.h"
#include "meshlm/core/memory_usage.h"
#include "meshlm/model/flops.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"
#include "meshlm/optim/optimizer.h"
#include "meshlm/parallel/zero_plan.h"
#include "meshlm/train/learner.h"

namespace meshlm {
namespace {

// train.device cuda: what of the plan lives in each GPU's memory, what on the host, and what
// would keep the run off the GPU (Learner::device_gap).
void print_gpu_plan(const Config& cfg, double device_bytes, double param_bytes) {
    const double MiB = 1024.0 * 1024, GiB = MiB * 1024;
    const std::string gap = Learner::device_gap(cfg.model, Device::cuda, cfg.train.coord_interval);
    if (!gap.empty())
        std::printf("note: train.device cuda is refused for this run: %s\n", gap.c_str());
    std::printf(
        "train.device cuda, per GPU: %.1f MiB (%.3f GiB) of GPU memory (everything above "
        "but the runtime); on the host: the runtime and a %.1f MiB copy of the parameters "
        "(init, checkpoints, final weights)\n",
        device_bytes / MiB, device_bytes / GiB, param_bytes / MiB);
}

}  // namespace

CommandRunner add_info_command(CLI::App& app, const std::vector<std::string>& overrides) {
    auto* cmd = app.add_subcommand("info", "Show parameters, FLOPs and planned memory of a config");
    auto path = std::make_shared<std::string>();
    cmd->add_option("--config", *path,
                    "YAML config file (default: configs/default.yaml, built in)");
    return [path, &overrides] {
        // The resident footprint of this binary and its libraries, before anything is planned:
        // a run has it too, on top of what it allocates.
        const double runtime = static_cast<double>(peak_rss_bytes());
        Config cfg = resolve_run_config(config_path_or_default(*path),
                                        overrides);  // as `meshlm train` would run it
        const ModelConfig& m = cfg.model;
        ParamLayout layout = transformer_layout(m);
        const double P = static_cast<double>(layout.count());
        const double GiB = 1024.0 * 1024 * 1024, MiB = 1024.0 * 1024;
        // Per data-parallel rank, for the ZeRO stage (parallel/zero_plan.h).
        // With tensor parallelism a rank holds its shard, which ZeRO chunks further.
        const int N = cfg.parallel.data, stage = cfg.parallel.zero_stage, M = cfg.parallel.model;
        const ParamLayout local = M > 1 ? transformer_layout(m, M) : layout;
        const Precision precision = parse_precision(cfg.train.precision);
        const ZeroMemory zm =
            zero_memory(ZeroPlan(local.total(), N, 0, stage), local,
                        optimizer_state_count(cfg.optim.name), precision == Precision::bf16);
        // The flat slots as ZeRO cuts them; Adafactor's full second moments of the unfactored
        // tensors in a rank's chunk (the largest of the data ranks') and its statistics.
        const ZeroPlan zplan(local.total(), N, 0, stage);
        std::size_t optim_bytes = 0;
        for (int d = 0; d < (cfg.optim.name == "adafactor" && stage >= 1 ? N : 1); ++d) {
            const std::size_t lo = stage >= 1 ? zplan.chunk * d : 0;
            const std::size_t n = stage >= 1 ? zplan.chunk : zplan.padded;
            optim_bytes = std::max(
                optim_bytes,
                optimizer_state_bytes(cfg.optim, n,
                                      cfg.optim.name == "adafactor"
                                          ? adafactor_plan(local, M, 0, lo, lo + n, cfg.optim)
                                          : AdafactorPlan{}));
        }
        const double params = static_cast<double>(zm.params), grads = static_cast<double>(zm.grads),
                     optim = static_cast<double>(optim_bytes),
                     working = static_cast<double>(zm.working);
        const Recompute recompute = parse_recompute(cfg.train.recompute);
        // model.vq.update_len: each row trains in chunks, one optimizer step each, and the
        // activations are those of a chunk.
        const int U = m.chunk_len(cfg.train.seq_len);
        auto acts_of = [&](Recompute r, Precision p) {
            return transformer_activation_floats(m, cfg.train.batch_size, U, M, r, p) * 4.0;
        };
        const double acts = acts_of(recompute, precision);
        // Rows trained in chunks carry their attention state to the next step: every
        // micro-batch's rows, plus the copy a training forward keeps for its backward.
        const double carried = U < cfg.train.seq_len
                                   ? 4.0 * static_cast<double>(vq_carried_state_floats(
                                               m,
                                               static_cast<std::size_t>(cfg.train.batch_size) *
                                                   (cfg.train.grad_accum + 1),
                                               M))
                                   : 0.0;
        const char* prec_label =
            precision == Precision::bf16 ? "bf16 GEMMs, fp32 weights and state" : "fp32";
        const double total = params + grads + optim + working + acts + carried + runtime;
        auto mem = [&](const char* what, double b) {
            std::printf("  %-26s %10.1f MiB  (%.3f GiB)\n", what, b / MiB, b / GiB);
        };
        std::printf(
            "config %s: %d layers, width %d, %d heads (%d key/value), vocab %d, context %d\n",
            cfg.name.c_str(), m.n_layer, m.d_model, m.n_head, m.kv_heads(), m.vocab_size,
            m.max_seq_len);
        std::printf("  %s block, %s, %s positions, MLP %s width %d, head %s\n", m.block.c_str(),
                    m.norm.c_str(), m.position.c_str(), m.mlp.c_str(), m.mlp_width(),
                    m.tied_head ? "tied" : "untied");
        std::printf("parameters: %.0f (%.2fM), non-embedding %zu\n", P, P / 1e6,
                    nonembedding_params(layout));
        std::printf("training FLOPs per token (T=%d): %.4g  (6*matmul weights + 6*V*d + %s)\n",
                    cfg.train.seq_len, train_flops_per_token(m, layout, cfg.train.seq_len),
                    m.vq() ? "6*L*((2*block+codes)*(d_k+d_v) + (block+1)*d_k) + 2*L*codes*d_k: VQ "
                             "attention and code search"
                           : "12*L*T*d");
        std::printf("tokens per step: %d (batch %d x seq %d x accum %d x data-parallel %d)%s\n",
                    cfg.train.batch_size * U * cfg.train.grad_accum * N, cfg.train.batch_size, U,
                    cfg.train.grad_accum, N,
                    U < cfg.train.seq_len ? " (model.vq.update_len: a row is several steps)" : "");
        if (N > 1 || stage > 0 || M > 1)
            std::printf(
                "planned memory per rank (%s, %s; %d data-parallel x %d tensor-parallel "
                "ranks, ZeRO stage %d; activations as one process):\n",
                prec_label, cfg.optim.name.c_str(), N, M, stage);
        else
            std::printf("planned memory (%s, %s):\n", prec_label, cfg.optim.name.c_str());
        mem("parameters", params);
        mem("gradients", grads);
        mem(cfg.optim.name == "lion"        ? "optimizer state (m)"
            : cfg.optim.name == "adafactor" ? "optimizer state (v, factored)"
                                            : "optimizer state (m, v)",
            optim);
        if (working > 0) mem(zero_working_label(ZeroPlan(local.total(), N, 0, stage)), working);
        char label[64];
        std::snprintf(label, sizeof label, "activations (B=%d, T=%d)", cfg.train.batch_size, U);
        mem(label, acts);
        if (carried > 0) {
            std::snprintf(label, sizeof label, "VQ state, %d rows",
                          cfg.train.batch_size * (cfg.train.grad_accum + 1));
            mem(label, carried);
        }
        mem("runtime (binary, libraries)", runtime);
        mem("total", total);
        std::printf("activations by train.recompute and train.precision (total with each):\n");
        for (Precision p : {Precision::fp32, Precision::bf16})
            for (Recompute r : {Recompute::none, Recompute::attention, Recompute::block}) {
                std::snprintf(label, sizeof label, "%s, %s%s", recompute_name(r), precision_name(p),
                              r == recompute && p == precision ? " (this config)" : "");
                std::printf("  %-30s %10.1f MiB  total %10.1f MiB\n", label, acts_of(r, p) / MiB,
                            (total - acts + acts_of(r, p)) / MiB);
            }
        if (N > 1 || stage > 0 || M > 1)
            std::printf("per-rank bytes: params %zu grads %zu optimizer %zu working %zu\n",
                        zm.params, zm.grads, optim_bytes, zm.working);
        if (cfg.train.device == "cuda") print_gpu_plan(cfg, total - runtime, params);
        return 0;
    };
}

}  // namespace meshlm

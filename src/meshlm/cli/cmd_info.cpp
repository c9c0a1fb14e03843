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

constexpr double kMiB = 1024.0 * 1024, kGiB = kMiB * 1024;

// train.device cuda: what of the plan lives in each GPU's memory, what on the host, and what
// would keep the run off the GPU (Learner::device_gap).
void print_gpu_plan(const Config& cfg, double device_bytes, double param_bytes) {
    const std::string gap = Learner::device_gap(cfg.model, Device::cuda, cfg.train.coord_interval);
    if (!gap.empty())
        std::printf("note: train.device cuda is refused for this run: %s\n", gap.c_str());
    std::printf(
        "train.device cuda, per GPU: %.1f MiB (%.3f GiB) of GPU memory (everything above "
        "but the runtime); on the host: the runtime and a %.1f MiB copy of the parameters "
        "(init, checkpoints, final weights)\n",
        device_bytes / kMiB, device_bytes / kGiB, param_bytes / kMiB);
}

void print_mem(const char* what, double b) {
    std::printf("  %-26s %10.1f MiB  (%.3f GiB)\n", what, b / kMiB, b / kGiB);
}

// The planned memory of a config, per data-parallel rank, for the ZeRO stage
// (parallel/zero_plan.h). With tensor parallelism a rank holds its shard, which ZeRO chunks
// further. The members are initialized in declaration order, each from those above it.
struct InfoPlan {
    const Config& cfg;
    ParamLayout layout;  // the whole model
    ParamLayout local;   // a tensor-parallel rank's shard
    int N, stage, M;     // data-parallel ranks, ZeRO stage, tensor-parallel ranks
    Precision precision;
    ZeroPlan zplan;
    ZeroMemory zm;
    std::size_t optim_bytes;
    double params, grads, optim, working;
    Recompute recompute;
    int U;  // tokens a row trains per step (model.vq.update_len)
    double acts, carried, runtime, total;

    InfoPlan(const Config& c, double runtime_bytes)
        : cfg(c),
          layout(transformer_layout(c.model)),
          local(c.parallel.model > 1 ? transformer_layout(c.model, c.parallel.model) : layout),
          N(c.parallel.data),
          stage(c.parallel.zero_stage),
          M(c.parallel.model),
          precision(parse_precision(c.train.precision)),
          zplan(local.total(), N, 0, stage),
          zm(zero_memory(zplan, local, optimizer_state_count(c.optim.name),
                         precision == Precision::bf16)),
          optim_bytes(largest_optimizer_bytes()),
          params(static_cast<double>(zm.params)),
          grads(static_cast<double>(zm.grads)),
          optim(static_cast<double>(optim_bytes)),
          working(static_cast<double>(zm.working)),
          recompute(parse_recompute(c.train.recompute)),
          // model.vq.update_len: each row trains in chunks, one optimizer step each, and the
          // activations are those of a chunk.
          U(c.model.chunk_len(c.train.seq_len)),
          acts(activation_bytes(recompute, precision)),
          carried(carried_bytes()),
          runtime(runtime_bytes),
          total(params + grads + optim + working + acts + carried + runtime) {}

    double activation_bytes(Recompute r, Precision p) const {
        return transformer_activation_floats(cfg.model, cfg.train.batch_size, U, M, r, p) * 4.0;
    }

  private:
    // The flat slots as ZeRO cuts them; Adafactor's full second moments of the unfactored
    // tensors in a rank's chunk (the largest of the data ranks') and its statistics.
    std::size_t largest_optimizer_bytes() const {
        std::size_t most = 0;
        for (int d = 0; d < (cfg.optim.name == "adafactor" && stage >= 1 ? N : 1); ++d) {
            const std::size_t lo = stage >= 1 ? zplan.chunk * d : 0;
            const std::size_t n = stage >= 1 ? zplan.chunk : zplan.padded;
            most = std::max(
                most, optimizer_state_bytes(cfg.optim, n,
                                            cfg.optim.name == "adafactor"
                                                ? adafactor_plan(local, M, 0, lo, lo + n, cfg.optim)
                                                : AdafactorPlan{}));
        }
        return most;
    }
    // Rows trained in chunks carry their attention state to the next step: every micro-batch's
    // rows, plus the copy a training forward keeps for its backward.
    double carried_bytes() const {
        if (U >= cfg.train.seq_len) return 0.0;
        return 4.0 *
               static_cast<double>(vq_carried_state_floats(
                   cfg.model,
                   static_cast<std::size_t>(cfg.train.batch_size) * (cfg.train.grad_accum + 1), M));
    }
};

// The model: its shape, parameters, FLOPs and tokens per step.
void print_model(const InfoPlan& p) {
    const Config& cfg = p.cfg;
    const ModelConfig& m = cfg.model;
    const double P = static_cast<double>(p.layout.count());
    std::printf("config %s: %d layers, width %d, %d heads (%d key/value), vocab %d, context %d\n",
                cfg.name.c_str(), m.n_layer, m.d_model, m.n_head, m.kv_heads(), m.vocab_size,
                m.max_seq_len);
    std::printf("  %s block, %s, %s positions, MLP %s width %d, head %s\n", m.block.c_str(),
                m.norm.c_str(), m.position.c_str(), m.mlp.c_str(), m.mlp_width(),
                m.tied_head ? "tied" : "untied");
    std::printf("parameters: %.0f (%.2fM), non-embedding %zu\n", P, P / 1e6,
                nonembedding_params(p.layout));
    std::printf("training FLOPs per token (T=%d): %.4g  (6*matmul weights + 6*V*d + %s)\n",
                cfg.train.seq_len, train_flops_per_token(m, p.layout, cfg.train.seq_len),
                m.vq() ? "6*L*((2*block+codes)*(d_k+d_v) + (block+1)*d_k) + 2*L*codes*d_k: VQ "
                         "attention and code search"
                       : "12*L*T*d");
    std::printf("tokens per step: %d (batch %d x seq %d x accum %d x data-parallel %d)%s\n",
                cfg.train.batch_size * p.U * cfg.train.grad_accum * p.N, cfg.train.batch_size, p.U,
                cfg.train.grad_accum, p.N,
                p.U < cfg.train.seq_len ? " (model.vq.update_len: a row is several steps)" : "");
}

// The planned memory, part by part.
void print_memory(const InfoPlan& p) {
    const Config& cfg = p.cfg;
    const char* prec_label =
        p.precision == Precision::bf16 ? "bf16 GEMMs, fp32 weights and state" : "fp32";
    if (p.N > 1 || p.stage > 0 || p.M > 1)
        std::printf(
            "planned memory per rank (%s, %s; %d data-parallel x %d tensor-parallel "
            "ranks, ZeRO stage %d; activations as one process):\n",
            prec_label, cfg.optim.name.c_str(), p.N, p.M, p.stage);
    else
        std::printf("planned memory (%s, %s):\n", prec_label, cfg.optim.name.c_str());
    print_mem("parameters", p.params);
    print_mem("gradients", p.grads);
    print_mem(cfg.optim.name == "lion"        ? "optimizer state (m)"
              : cfg.optim.name == "adafactor" ? "optimizer state (v, factored)"
                                              : "optimizer state (m, v)",
              p.optim);
    if (p.working > 0) print_mem(zero_working_label(p.zplan), p.working);
    char label[64];
    std::snprintf(label, sizeof label, "activations (B=%d, T=%d)", cfg.train.batch_size, p.U);
    print_mem(label, p.acts);
    if (p.carried > 0) {
        std::snprintf(label, sizeof label, "VQ state, %d rows",
                      cfg.train.batch_size * (cfg.train.grad_accum + 1));
        print_mem(label, p.carried);
    }
    print_mem("runtime (binary, libraries)", p.runtime);
    print_mem("total", p.total);
}

// The activations, and the total, under each train.recompute and train.precision.
void print_recompute_choices(const InfoPlan& p) {
    std::printf("activations by train.recompute and train.precision (total with each):\n");
    char label[64];
    for (Precision pr : {Precision::fp32, Precision::bf16})
        for (Recompute r : {Recompute::none, Recompute::attention, Recompute::block}) {
            std::snprintf(label, sizeof label, "%s, %s%s", recompute_name(r), precision_name(pr),
                          r == p.recompute && pr == p.precision ? " (this config)" : "");
            std::printf("  %-30s %10.1f MiB  total %10.1f MiB\n", label,
                        p.activation_bytes(r, pr) / kMiB,
                        (p.total - p.acts + p.activation_bytes(r, pr)) / kMiB);
        }
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
        const InfoPlan plan(cfg, runtime);
        print_model(plan);
        print_memory(plan);
        print_recompute_choices(plan);
        if (plan.N > 1 || plan.stage > 0 || plan.M > 1)
            std::printf("per-rank bytes: params %zu grads %zu optimizer %zu working %zu\n",
                        plan.zm.params, plan.zm.grads, plan.optim_bytes, plan.zm.working);
        if (cfg.train.device == "cuda") print_gpu_plan(cfg, plan.total - plan.runtime, plan.params);
        return 0;
    };
}

}  // namespace meshlm

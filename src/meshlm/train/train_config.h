// Trainer and logging settings.
#pragma once

#include <cstdint>
#include <string>

namespace meshlm {

struct TrainConfig {
    int steps = 2000;
    int batch_size = 16;  // sequences per micro-batch
    int seq_len = 128;    // T; at most model.max_seq_len
    int grad_accum = 1;   // micro-batches per optimizer step
    std::uint64_t seed = 1337;
    int threads = 0;         // 0 = all cores
    double peak_gflops = 0;  // peak for MFU (fp32 or bf16 as trained); 0 = measure at start
    int eval_batches = 0;    // validation batches per periodic evaluation; 0 = the whole split
    // Validation batches of the final evaluation; 0 = the whole split; -1 = sized to the run
    // (train/final_eval_size.h).
    int final_eval_batches = -1;
    // Staged sequence-length warmup: the first seq_warmup_steps steps train on sequences of
    // seq_warmup_len tokens, with batch_size * seq_len / seq_warmup_len rows (same tokens).
    int seq_warmup_steps = 0;
    int seq_warmup_len = 0;
    // Activation recomputation: none | attention | block (model/transformer.h says what each
    // keeps). Bitwise the same training, less activation memory, more compute.
    std::string recompute = "none";
    // The GEMMs' precision: fp32 | bf16 (bf16 operands, fp32 masters, sums, gradients and
    // optimizer state; model/linear.h) | auto (bf16 where the CPU has native bf16 dot products).
    std::string precision = "auto";
    // Where training runs: auto | cpu | cuda (kernels::resolve_run_device).
    std::string device = "auto";
    // Coordinate check during training: every this many steps, metrics.jsonl gets the mean
    // |activation| at every site and mean |update| / lr of every tensor (0 = never).
    int coord_interval = 0;
    // A step with a non-finite loss or gradient norm, or a loss spike, is not applied; then
    // halt | skip | rollback (train/nan_policy.h, docs/reliability.md).
    std::string nan_policy = "halt";
    int rollback_skip_batches = 200;  // rollback: batches skipped after the reloaded checkpoint
    int max_rollbacks = 3;            // rollback: more than this many in one process halts
    double spike_factor = 0;          // a loss above this x the running mean is a spike; 0 = off
    int spike_window = 50;            // steps in the running mean (spikes are checked once full)
    int debug_inject_nan_step = 0;    // tests only: a NaN gradient at this step (0 = never)
    // Checkpoint averaging (train/weight_average.h): a snapshot of the weights every
    // average_every steps (0 = off); model.avg.safetensors is the mean of the newest
    // average_last.
    int average_every = 0;
    int average_last = 5;
};

// Steps [first, last], both counted from 1; empty (first = 0) = none. In YAML `[first, last]`.
struct StepRange {
    long first = 0, last = 0;
    bool empty() const { return first == 0; }
    bool contains(long step) const { return first > 0 && step >= first && step <= last; }
};

struct LogConfig {
    std::string dir;          // run directory; empty = runs/<config name>
    int interval = 10;        // steps between log lines
    int eval_interval = 250;  // steps between validation passes (and always at the end)
    int sample_tokens = 200;  // length of the sample printed at the end; 0 = none
    std::string sample_prompt = "";
    bool tensorboard = false;  // RUN_DIR/tb/events.out.tfevents.* beside metrics.jsonl
    StepRange profile_steps;   // steps traced into RUN_DIR/trace.json (train/trace_files.h)
    int diag_interval = 0;     // steps between diagnostics records (train/diagnostics.h); 0 = off
};

}  // namespace meshlm

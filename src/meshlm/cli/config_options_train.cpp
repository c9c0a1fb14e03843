// The `train` section of the option table (config_table.h): one `.add(...)` per key, in the
// order `meshlm config --list`, the dump and the help show them.
#include "meshlm/cli/config_table.h"

namespace meshlm::config_detail {

void add_train_options(OptionTable& t) {
    Section<TrainConfig>(t, "train", &Config::train)
        .add("steps", &TrainConfig::steps, "optimizer steps", at_least(1))
        .add("batch_size", &TrainConfig::batch_size, "sequences per micro-batch (B)", at_least(1))
        .add("seq_len", &TrainConfig::seq_len, "tokens per sequence (T); <= model.max_seq_len",
             at_least(1))
        .add("grad_accum", &TrainConfig::grad_accum, "micro-batches per optimizer step",
             at_least(1))
        .add("seed", &TrainConfig::seed, "seeds init, batches and sampling")
        .add("threads", &TrainConfig::threads, "CPU threads; 0 = all cores", at_least(0))
        .add("peak_gflops", &TrainConfig::peak_gflops,
             "peak GFLOP/s for MFU (of train.precision's arithmetic); 0 = measure at start",
             at_least(0))
        .add("eval_batches", &TrainConfig::eval_batches,
             "validation batches per periodic evaluation; 0 = the whole split", at_least(0))
        .add("final_eval_batches", &TrainConfig::final_eval_batches,
             "validation batches of the final evaluation; 0 = the whole split; -1 = sized to "
             "the run: the whole split, but at most the tokens the run trains on and at least "
             "a periodic evaluation's batches",
             at_least(-1))
        .add("seq_warmup_steps", &TrainConfig::seq_warmup_steps,
             "steps trained at seq_warmup_len before seq_len (tokens per step kept)", at_least(0))
        .add("seq_warmup_len", &TrainConfig::seq_warmup_len,
             "sequence length during the warmup; must divide train.seq_len", at_least(0))
        .add("coord_interval", &TrainConfig::coord_interval,
             "steps between coordinate-check records in metrics.jsonl (0 = never)", at_least(0))
        .add("recompute", &TrainConfig::recompute,
             "activations the backward recomputes instead of keeping (same results, less memory)",
             one_of({"none", "attention", "block"}))
        .add("precision", &TrainConfig::precision,
             "the GEMMs' precision (bf16: bf16 operands, fp32 masters, sums and optimizer state; "
             "auto: bf16 where the CPU has native bf16 dot products)",
             one_of({"fp32", "bf16", "auto"}))
        .add("device", &TrainConfig::device,
             "where training runs: cpu; cuda (one process, GPU rank mod the visible count; what "
             "still needs the host is refused by name: see docs/cuda.md); auto: cuda where a "
             "GPU is visible and the run can use it, else cpu",
             one_of({"auto", "cpu", "cuda"}))
        .add("nan_policy", &TrainConfig::nan_policy,
             "a step whose loss or gradient norm is not finite, or whose loss spikes, is not "
             "applied; then halt (checkpoint the last good step, exit non-zero), skip (drop the "
             "update, count it) or rollback (reload the last checkpoint, skip "
             "rollback_skip_batches batches)",
             one_of({"halt", "skip", "rollback"}))
        .add("rollback_skip_batches", &TrainConfig::rollback_skip_batches,
             "nan_policy rollback: batches skipped after the reloaded checkpoint", at_least(0))
        .add("max_rollbacks", &TrainConfig::max_rollbacks,
             "nan_policy rollback: one more bad step after this many rollbacks halts", at_least(0))
        .add("spike_factor", &TrainConfig::spike_factor,
             "a loss above spike_factor x the mean of the last spike_window steps is a spike "
             "(logged, then nan_policy); 0 = off",
             at_least(0))
        .add("spike_window", &TrainConfig::spike_window,
             "steps in the running mean of spike_factor; spikes are checked once it is full",
             at_least(1))
        .add("debug_inject_nan_step", &TrainConfig::debug_inject_nan_step,
             "for tests only: the last rank's first gradient element becomes NaN at this step "
             "(once); 0 = never",
             at_least(0))
        .add("average.every", &TrainConfig::average_every,
             "checkpoint averaging (LAWA): a snapshot of the weights every this many steps; "
             "RUN_DIR/model.avg.safetensors (with each checkpoint and at the end) is the mean of "
             "the newest train.average.last; 0 = off",
             at_least(0))
        .add("average.last", &TrainConfig::average_last,
             "checkpoint averaging: snapshots in the window (a sliding window, not an EMA)",
             at_least(1));
}

}  // namespace meshlm::config_detail

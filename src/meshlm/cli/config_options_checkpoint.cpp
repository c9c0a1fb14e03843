// The `checkpoint` section of the option table (config_table.h): one `.add(...)` per key, in the
// order `meshlm config --list`, the dump and the help show them.
#include "meshlm/cli/config_table.h"

namespace meshlm::config_detail {

void add_checkpoint_options(OptionTable& t) {
    Section<CheckpointConfig>(t, "checkpoint", &Config::checkpoint)
        .add("interval", &CheckpointConfig::interval,
             "steps between checkpoints (one is also written at the end); 0 = only on "
             "SIGINT/SIGTERM",
             at_least(0))
        .add("keep_last", &CheckpointConfig::keep_last, "newest checkpoints kept", at_least(1))
        .add("keep_every", &CheckpointConfig::keep_every,
             "also keep checkpoints whose step is a multiple of this; 0 = none", at_least(0))
        .add("only_better", &CheckpointConfig::only_better,
             "write a periodic checkpoint only when the validation loss improved")
        .add("max_shard_size", &CheckpointConfig::max_shard_size,
             "model.safetensors is split into HF-style shards above this size", byte_size())
        .add("resume", &CheckpointConfig::resume,
             "auto: continue from RUN_DIR/checkpoints/latest when it exists",
             one_of({"none", "auto"}))
        .add("on_error", &CheckpointConfig::on_error,
             "a checkpoint that cannot be written (full disk, I/O error): stop (exit non-zero) or "
             "continue (warn, train on, retry at the next checkpoint); the previous checkpoint "
             "stays intact either way",
             one_of({"stop", "continue"}));
}

}  // namespace meshlm::config_detail

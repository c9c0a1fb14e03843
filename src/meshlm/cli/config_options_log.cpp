// The `log` section of the option table (config_table.h): one `.add(...)` per key, in the
// order `meshlm config --list`, the dump and the help show them.
#include "meshlm/cli/config_table.h"

namespace meshlm::config_detail {

void add_log_options(OptionTable& t) {
    Section<LogConfig>(t, "log", &Config::log)
        .add("dir", &LogConfig::dir, "run directory; empty = runs/<config name>")
        .add("interval", &LogConfig::interval, "steps between log lines", at_least(1))
        .add("eval_interval", &LogConfig::eval_interval,
             "steps between validation passes; 0 = only at the end", at_least(0))
        .add("sample_tokens", &LogConfig::sample_tokens,
             "length of the sample printed at the end; 0 = none", at_least(0))
        .add("sample_prompt", &LogConfig::sample_prompt, "prompt of that sample")
        .add("tensorboard", &LogConfig::tensorboard,
             "also write TensorBoard event files into RUN_DIR/tb/ (every logged metric, the "
             "validation loss and the final sample)")
        .add("profile_steps", &LogConfig::profile_steps,
             "steps [first, last] to trace (forward, backward, optimizer, collectives, data, "
             "checkpoints) into RUN_DIR/trace.json for Perfetto; [] = none")
        .add("diag_interval", &LogConfig::diag_interval,
             "steps between diagnostics (activation RMS per layer, update/weight RMS per tensor, "
             "gradient noise scale) in the metrics; 0 = off",
             at_least(0));
}

}  // namespace meshlm::config_detail

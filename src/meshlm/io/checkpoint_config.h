// When and how the trainer writes checkpoints (config section `checkpoint`).
#pragma once

#include <string>

namespace meshlm {

struct CheckpointConfig {
    int interval = 500;  // steps between checkpoints (and one at the end); 0 = only on a signal
    int keep_last = 3;   // newest checkpoints kept; older ones are deleted
    int keep_every = 0;  // also keep every checkpoint whose step is a multiple of this; 0 = none
    bool only_better = false;  // write only when the validation loss improved on the best so far
    std::string max_shard_size = "2GB";  // model.safetensors is split into shards above this
    std::string resume = "none";         // none | auto (continue from RUN_DIR/checkpoints/latest)
    // A checkpoint that cannot be written (full disk, I/O error): stop (exit non-zero) or
    // continue (warn, train on, try again at the next checkpoint). Either way the previous
    // checkpoint and `latest` stay intact and the partial files are removed.
    std::string on_error = "stop";
};

}  // namespace meshlm

// Staged sequence-length warmup (seed 000's warmup_train_context): the first seq_warmup_steps
// optimizer steps train on rows of seq_warmup_len tokens, the loader's windows of seq_len cut
// into seq_len / seq_warmup_len rows each, so every step trains on batch_size * seq_len tokens
// per micro-batch (the seed reshapes each (B, seq_len) batch to (-1, warmup length)); from step
// seq_warmup_steps on, rows of seq_len.
#pragma once

#include "meshlm/train/train_config.h"

namespace meshlm {

struct StepShape {
    int rows = 0, len = 0;  // of one micro-batch on one data-parallel rank
};

// The shape of 0-based optimizer step `step`.
StepShape step_shape(const TrainConfig& tc, long step);

}  // namespace meshlm

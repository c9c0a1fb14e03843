#include "meshlm/train/seq_warmup.h"

namespace meshlm {

StepShape step_shape(const TrainConfig& tc, long step) {
    if (step >= tc.seq_warmup_steps || tc.seq_warmup_len <= 0) return {tc.batch_size, tc.seq_len};
    return {tc.batch_size * tc.seq_len / tc.seq_warmup_len, tc.seq_warmup_len};
}

}  // namespace meshlm

// The device a command computes on (train.device, --device on sample, eval and serve).
#pragma once

#include <string>

#include "meshlm/core/tensor.h"

namespace meshlm::kernels {

// Why sample, eval and serve stay on the CPU: their decoders' state is host memory.
inline constexpr const char* kNoGpuDecoding =
    "decoding (the KV caches, sampling and scoring) runs on the host yet";

// From `name`, named `what` in errors: cpu; cuda, when this build has CUDA, this machine a GPU
// and `gap` (why the command's model cannot run on a GPU, "" when it can) is empty, else an
// error saying which of them is missing; auto, which is cuda where cuda would be accepted and
// the CPU otherwise. Anything else is refused with the valid names. With cuda, this thread's
// GPU becomes `rank` mod the visible count (one process per GPU).
Device resolve_run_device(const std::string& name, const char* what, const std::string& gap,
                          int rank = 0);

}  // namespace meshlm::kernels

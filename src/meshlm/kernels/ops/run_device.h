// The device a command computes on (train.device, --device on sample, eval and serve).
#pragma once

#include <string>

#include "meshlm/core/tensor.h"

namespace meshlm::kernels {

// From `name`, named `what` in errors: cpu, or auto, which is the CPU until the model's buffers
// live in device memory. cuda first says why this build or machine has no GPU, as
// require_device() does; with one, it says that the model cannot run there yet. Anything else is
// refused with the valid names.
Device resolve_run_device(const std::string& name, const char* what);

}  // namespace meshlm::kernels

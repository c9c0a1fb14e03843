#include "meshlm/kernels/ops/run_device.h"

#include "meshlm/core/error.h"
#include "meshlm/kernels/device.h"

namespace meshlm::kernels {

Device resolve_run_device(const std::string& name, const char* what) {
    if (name == "cpu" || name == "auto") return Device::cpu;
    if (name != "cuda")
        throw Error(detail::concat(what, " '", name, "': expected auto, cpu or cuda"));
    const std::string asked = detail::concat(what, " cuda");
    require_device(Device::cuda, asked.c_str());
    throw Error(detail::concat(asked, ": the CUDA kernels are built and this machine has ",
                               cuda_device_count(),
                               " GPU(s), but the model's parameters, gradients and activations "
                               "do not live in GPU memory yet; run on the CPU (cpu or auto)"));
}

}  // namespace meshlm::kernels

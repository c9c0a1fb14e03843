#include "meshlm/kernels/ops/run_device.h"

#include "meshlm/core/error.h"
#include "meshlm/kernels/device.h"

namespace meshlm::kernels {

Device resolve_run_device(const std::string& name, const char* what, const std::string& gap,
                          int rank) {
    if (name == "cpu") return Device::cpu;
    if (name == "auto" && (!gap.empty() || cuda_device_count() == 0)) return Device::cpu;
    if (name != "cuda" && name != "auto")
        throw Error(detail::concat(what, " '", name, "': expected auto, cpu or cuda"));
    const std::string asked = detail::concat(what, " cuda");
    require_device(Device::cuda, asked.c_str());
    if (!gap.empty())
        throw Error(detail::concat(asked, ": ", gap, "; run on the CPU (cpu or auto)"));
    set_cuda_device(rank % cuda_device_count());
    return Device::cuda;
}

}  // namespace meshlm::kernels

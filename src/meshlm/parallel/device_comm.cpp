// make_device_world (parallel/device_comm.h): NcclComm in a CUDA build, a named refusal elsewhere.
#include "meshlm/parallel/device_comm.h"

#include "meshlm/core/error.h"
#include "meshlm/kernels/device.h"
#include "meshlm/parallel/mpi_comm.h"
#ifdef MESHLM_HAVE_CUDA
#include "meshlm/parallel/nccl_comm.h"
#endif

namespace meshlm {

std::unique_ptr<Comm> make_device_world(Comm& world, Device device) {
    if (device == Device::cpu || world.size() == 1) return nullptr;
    kernels::require_device(device, "several ranks on a GPU (NcclComm)");
#ifdef MESHLM_HAVE_CUDA
    try {
        return std::make_unique<NcclComm>(world, comm_timeout_from_env());
    } catch (const Error& e) {
        // The usual cause: more ranks on a host than it has GPUs (rank r takes GPU r mod the
        // visible count), which NCCL refuses ("Duplicate GPU detected").
        throw Error(detail::concat(
            "NCCL communicator over ", world.size(), " ranks: ", e.what(), " (this host has ",
            kernels::cuda_device_count(),
            " visible GPUs, rank r takes GPU r mod that count, "
            "and NCCL refuses two ranks on one GPU: launch at most one rank per GPU)"));
    }
#else
    return nullptr;  // not reached: require_device names -DMESHLM_CUDA=ON
#endif
}

}  // namespace meshlm

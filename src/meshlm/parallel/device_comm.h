// The communicator a run's device collectives go through: on the CPU the host world itself; for
// CUDA runs of several processes an NcclComm bootstrapped over the (MPI) world, whose host()
// is that world. A DeviceMesh built over it splits both alike (NcclComm::split), so the
// learner's data and model groups move device buffers over NCCL and host scalars over MPI.
#pragma once

#include <memory>

#include "meshlm/parallel/comm.h"

namespace meshlm {

// nullptr when `world` serves (device cpu, or one process: nothing moves between ranks);
// otherwise an NcclComm over `world` with MESHLM_COMM_TIMEOUT, collective over `world`. This
// thread's GPU must be current (kernels::resolve_run_device picks rank mod the visible count).
// Throws naming -DMESHLM_CUDA=ON in a build without CUDA.
std::unique_ptr<Comm> make_device_world(Comm& world, Device device);

}  // namespace meshlm

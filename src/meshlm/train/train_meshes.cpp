#include "meshlm/train/train_meshes.h"

#include "meshlm/kernels/ops/run_device.h"
#include "meshlm/parallel/device_comm.h"
#include "meshlm/train/learner.h"

namespace meshlm {
namespace {

// train.device resolved against what the learner cannot do on a GPU at this layout.
Device resolve_train_device(const TrainJob& job, const DeviceMesh& mesh) {
    const std::string gap = Learner::device_gap(job.model, Device::cuda, job.train.coord_interval);
    return kernels::resolve_run_device(job.train.device, "train.device", gap, mesh.world().rank());
}

}  // namespace

TrainMeshes::TrainMeshes(const TrainJob& job)
    : world_(job.world ? *job.world : local_),
      host_(world_, job.parallel.data, job.parallel.model),
      device_(resolve_train_device(job, host_)),
      device_world_(make_device_world(world_, device_)) {
    if (device_world_) device_mesh_.emplace(*device_world_, job.parallel.data, job.parallel.model);
}

void TrainMeshes::reset_bytes_sent() {
    host_.reset_bytes_sent();
    if (device_mesh_) device_mesh_->reset_bytes_sent();
}

std::uint64_t TrainMeshes::bytes_sent() const {
    return host_.bytes_sent() + (device_mesh_ ? device_mesh_->bytes_sent() : 0);
}

}  // namespace meshlm

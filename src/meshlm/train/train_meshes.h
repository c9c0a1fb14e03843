// The ranks a run trains on and the device it runs on. The host mesh carries the trainer's own
// collectives (data, checkpoints, stop flags, evaluation sums); with several ranks on GPUs the
// learner's collectives go over a second mesh of NCCL communicators (whose host() twins carry
// its scalars). Data comes by the mesh's data index: the model ranks of one replica train on
// the same rows.
//
// exports: TrainMeshes
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "meshlm/kernels/device.h"
#include "meshlm/parallel/local_comm.h"
#include "meshlm/parallel/mesh.h"
#include "meshlm/train/trainer.h"

namespace meshlm {

class TrainMeshes {
  public:
    // Resolves train.device (refusing a GPU the run cannot use, by name) before anything is
    // written. Collective over job.world.
    explicit TrainMeshes(const TrainJob& job);
    TrainMeshes(const TrainMeshes&) = delete;
    TrainMeshes& operator=(const TrainMeshes&) = delete;

    Comm& world() const { return world_; }
    const DeviceMesh& host() const { return host_; }
    const DeviceMesh& learner_mesh() const { return device_mesh_ ? *device_mesh_ : host_; }
    Device device() const { return device_; }
    bool nccl() const { return device_world_ != nullptr; }  // the learner's collectives on NCCL
    bool writer() const { return world_.rank() == 0; }      // prints, owns the run directory

    // Bytes this rank sent over both meshes since the last reset (a step's traffic).
    void reset_bytes_sent();
    std::uint64_t bytes_sent() const;

  private:
    LocalComm local_;
    Comm& world_;
    DeviceMesh host_;
    Device device_;
    std::unique_ptr<Comm> device_world_;
    std::optional<DeviceMesh> device_mesh_;
};

}  // namespace meshlm

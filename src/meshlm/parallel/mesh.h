// DeviceMesh: the world's ranks arranged as a (data × model) grid. Rank = data_index * model +
// model_index: the ranks of one model-parallel group are adjacent, so with ranks filled host by
// host (mpirun's default) tensor-parallel traffic, the heaviest, stays inside a host.
// data_comm() joins the ranks holding the same model shard (gradient all-reduce / ZeRO);
// model_comm() joins the ranks splitting one model replica (tensor-parallel collectives).
#pragma once

#include <cstdint>
#include <memory>

#include "meshlm/core/tp_divisibility.h"  // the shapes a mesh's model ranks split
#include "meshlm/parallel/comm.h"

namespace meshlm {

class DeviceMesh {
  public:
    // Throws InvalidInput unless data * model == world.size(). Collective over `world` (splits
    // it); `world` must outlive the mesh.
    DeviceMesh(Comm& world, int data, int model);

    int data_size() const { return data_; }
    int model_size() const { return model_; }
    int data_index() const { return data_index_; }    // == data_comm().rank()
    int model_index() const { return model_index_; }  // == model_comm().rank()
    static int rank_of(int data_index, int model_index, int model) {
        return data_index * model + model_index;
    }

    Comm& world() const { return world_; }
    Comm& data_comm() const { return *data_comm_; }
    Comm& model_comm() const { return *model_comm_; }

    // Bytes sent by this rank over the world and both axes since their last reset.
    std::uint64_t bytes_sent() const;
    void reset_bytes_sent();

  private:
    Comm& world_;
    int data_, model_, data_index_, model_index_;
    std::unique_ptr<Comm> data_comm_, model_comm_;
};

}  // namespace meshlm

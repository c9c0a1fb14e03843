#include "meshlm/parallel/mesh.h"

#include "meshlm/core/error.h"

namespace meshlm {

DeviceMesh::DeviceMesh(Comm& world, int data, int model)
    : world_(world), data_(data), model_(model) {
    if (data < 1 || model < 1)
        MESHLM_INVALID("parallel.data (", data, ") and parallel.model (", model,
                       ") must be at least 1");
    if (data * model != world.size())
        MESHLM_INVALID("parallel.data (", data, ") x parallel.model (", model, ") = ", data * model,
                       " must equal the number of ranks (", world.size(), "): launch ",
                       data * model, " ranks (mpirun -np ", data * model,
                       ") or choose sizes whose product is ", world.size());
    data_index_ = world.rank() / model;
    model_index_ = world.rank() % model;
    model_comm_ = world.split(/*color=*/data_index_, /*key=*/model_index_);
    data_comm_ = world.split(/*color=*/model_index_, /*key=*/data_index_);
}

namespace {
// c's bytes and, for a device communicator, its host twin's (the loss, counts, norm sums).
std::uint64_t sent_with_host(Comm& c) {
    return c.bytes_sent() + (&c.host() != &c ? c.host().bytes_sent() : 0);
}
void reset_with_host(Comm& c) {
    c.reset_bytes_sent();
    c.host().reset_bytes_sent();
}
}  // namespace

std::uint64_t DeviceMesh::bytes_sent() const {
    return world_.bytes_sent() + sent_with_host(*data_comm_) + sent_with_host(*model_comm_);
}

void DeviceMesh::reset_bytes_sent() {
    world_.reset_bytes_sent();
    reset_with_host(*data_comm_);
    reset_with_host(*model_comm_);
}

}  // namespace meshlm

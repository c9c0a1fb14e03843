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

namespace {
void check_divides(int model, int value, const char* what) {
    if (value % model == 0) return;
    const int up = (value / model + 1) * model;
    MESHLM_INVALID(what, " (", value, ") must be divisible by parallel.model (", model,
                   ") for tensor parallelism: use ", up, " or a parallel.model that divides ",
                   value);
}
}  // namespace

void check_model_parallel_shapes(int model, int n_head, int n_kv_head, int d_ff, int vq_d_v) {
    if (model <= 1) return;
    if (vq_d_v > 0) {
        check_divides(model, vq_d_v, "the VQ value width (model.vq.d_v, 0 = 2 x model.d_model)");
    } else {
        check_divides(model, n_head, "model.n_head");
        check_divides(model, n_kv_head, "the key/value heads (model.n_kv_head, 0 = n_head)");
    }
    check_divides(model, d_ff, "the MLP width (model.d_ff, 0 = 4 x model.d_model)");
}

}  // namespace meshlm

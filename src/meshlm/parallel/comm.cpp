// The backend-independent half of Comm: argument checks and byte counting, done once here so
// every backend counts by the same convention (parallel/traffic.h).
#include "meshlm/parallel/comm.h"

#include <numeric>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/parallel/traffic.h"

namespace meshlm {

std::size_t comm_type_size(CommType t) {
    switch (t) {
        case CommType::f32:
            return 4;
        case CommType::f64:
            return 8;
        case CommType::i32:
            return 4;
        case CommType::i64:
            return 8;
        case CommType::u8:
            return 1;
        case CommType::u16:
            return 2;
    }
    return 0;
}

const char* comm_op_name(CommOp op) {
    switch (op) {
        case CommOp::all_reduce:
            return "all_reduce";
        case CommOp::reduce_scatter:
            return "reduce_scatter";
        case CommOp::all_gather:
            return "all_gather";
        case CommOp::broadcast:
            return "broadcast";
    }
    return "?";
}

std::uint64_t Comm::bytes_sent() const {
    return std::accumulate(bytes_.begin(), bytes_.end(), std::uint64_t{0});
}

CommRequest Comm::start_all_reduce_counted(void* buf, std::size_t n, CommType t, ReduceOp op) {
    count(CommOp::all_reduce, traffic_all_reduce(n, size(), rank(), comm_type_size(t)));
    return start_all_reduce(buf, n, t, op);
}

namespace {
// The per-rank chunk sizes of an even or uneven call.
std::vector<std::size_t> chunk_sizes(std::size_t n, std::span<const std::size_t> counts, int size,
                                     const char* op) {
    if (counts.empty()) return std::vector<std::size_t>(size, n);
    MESHLM_CHECK(static_cast<int>(counts.size()) == size, op, ": ", counts.size(),
                 " chunk sizes for ", size, " ranks");
    return {counts.begin(), counts.end()};
}
}  // namespace

CommRequest Comm::start_reduce_scatter_counted(const void* in, void* out, std::size_t n,
                                               std::span<const std::size_t> counts, CommType t) {
    const auto chunks = chunk_sizes(n, counts, size(), "reduce_scatter");
    const std::size_t es = comm_type_size(t);
    const std::size_t total = std::accumulate(chunks.begin(), chunks.end(), std::size_t{0});
    const auto* a = static_cast<const char*>(in);
    const auto* b = static_cast<const char*>(out);
    MESHLM_CHECK(total == 0 || b + chunks[rank()] * es <= a || a + total * es <= b,
                 "reduce_scatter: input and output buffers overlap");
    count(CommOp::reduce_scatter, traffic_reduce_scatter(chunks, rank(), es));
    return start_reduce_scatter(in, out, n, counts, t);
}

CommRequest Comm::start_all_gather_counted(void* buf, std::size_t n,
                                           std::span<const std::size_t> counts, CommType t) {
    const auto chunks = chunk_sizes(n, counts, size(), "all_gather");
    count(CommOp::all_gather, traffic_all_gather(chunks, rank(), comm_type_size(t)));
    return start_all_gather(buf, n, counts, t);
}

CommRequest Comm::start_broadcast_counted(void* buf, std::size_t n, CommType t, int root) {
    MESHLM_CHECK(root >= 0 && root < size(), "broadcast: root ", root, " is not a rank of ",
                 size());
    count(CommOp::broadcast, traffic_broadcast(n, size(), rank(), root, comm_type_size(t)));
    return start_broadcast(buf, n, t, root);
}

}  // namespace meshlm

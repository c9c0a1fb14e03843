// The backend-independent half of Comm: argument checks and byte counting, done once here so
// every backend counts by the same convention (parallel/traffic.h).
#include "meshlm/parallel/comm.h"

#include <numeric>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/core/trace.h"
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

namespace {
// A collective's issue as a trace event carrying the bytes this rank sends; the time it blocks
// is its request's "<op> wait" event (the two nest in whatever scope runs them, also when a
// non-blocking one is waited for later).
template <typename Start>
CommRequest traced_start(CommOp op, std::uint64_t bytes, Start&& start) {
    static constexpr const char* kWait[kCommOpCount] = {"all_reduce wait", "reduce_scatter wait",
                                                        "all_gather wait", "broadcast wait"};
    CommRequest r;
    {
        TraceScope trace(comm_op_name(op), -1, static_cast<std::int64_t>(bytes));
        r = start();
    }
    r.set_wait_name(kWait[static_cast<int>(op)]);
    return r;
}
}  // namespace

std::uint64_t Comm::bytes_sent() const {
    return std::accumulate(bytes_.begin(), bytes_.end(), std::uint64_t{0});
}

CommRequest Comm::start_all_reduce_counted(void* buf, std::size_t n, CommType t, ReduceOp op) {
    const std::uint64_t bytes = traffic_all_reduce(n, size(), rank(), comm_type_size(t));
    count(CommOp::all_reduce, bytes);
    return traced_start(CommOp::all_reduce, bytes, [&] { return start_all_reduce(buf, n, t, op); });
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
    const std::uint64_t bytes = traffic_reduce_scatter(chunks, rank(), es);
    count(CommOp::reduce_scatter, bytes);
    return traced_start(CommOp::reduce_scatter, bytes,
                        [&] { return start_reduce_scatter(in, out, n, counts, t); });
}

CommRequest Comm::start_all_gather_counted(void* buf, std::size_t n,
                                           std::span<const std::size_t> counts, CommType t) {
    const auto chunks = chunk_sizes(n, counts, size(), "all_gather");
    const std::uint64_t bytes = traffic_all_gather(chunks, rank(), comm_type_size(t));
    count(CommOp::all_gather, bytes);
    return traced_start(CommOp::all_gather, bytes,
                        [&] { return start_all_gather(buf, n, counts, t); });
}

CommRequest Comm::start_broadcast_counted(void* buf, std::size_t n, CommType t, int root) {
    MESHLM_CHECK(root >= 0 && root < size(), "broadcast: root ", root, " is not a rank of ",
                 size());
    const std::uint64_t bytes = traffic_broadcast(n, size(), rank(), root, comm_type_size(t));
    count(CommOp::broadcast, bytes);
    return traced_start(CommOp::broadcast, bytes, [&] { return start_broadcast(buf, n, t, root); });
}

}  // namespace meshlm

#include "meshlm/parallel/mpi_comm.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/parallel/rank_activity.h"

namespace meshlm {

namespace {

// MPI-3 counts are int: longer contiguous buffers go as several operations of this many.
constexpr std::size_t kMaxPiece = std::size_t{1} << 30;

// Errors name the call; the error policy (parallel/failure.h) adds the rank.
void check_mpi(int rc, const char* call) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    throw Error(detail::concat(call, " failed: ", std::string(text, len)));
}

MPI_Datatype mpi_type(CommType t) {
    switch (t) {
        case CommType::f32:
            return MPI_FLOAT;
        case CommType::f64:
            return MPI_DOUBLE;
        case CommType::i32:
            return MPI_INT32_T;
        case CommType::i64:
            return MPI_INT64_T;
        case CommType::u8:
            return MPI_UINT8_T;
        case CommType::u16:
            return MPI_UINT16_T;
    }
    return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(ReduceOp op) {
    switch (op) {
        case ReduceOp::sum:
            return MPI_SUM;
        case ReduceOp::max:
            return MPI_MAX;
        case ReduceOp::min:
            return MPI_MIN;
    }
    return MPI_OP_NULL;
}

int as_count(std::size_t n, const char* op) {
    MESHLM_CHECK(n <= static_cast<std::size_t>(INT_MAX), op, ": ", n,
                 " elements exceed MPI-3's int counts; shard the buffer more finely");
    return static_cast<int>(n);
}

// One started MPI operation (possibly several requests), with the count arrays MPI reads
// until it completes.
class MpiPending final : public CommRequest::Pending {
  public:
    MpiPending(const char* op, double timeout_s) : op_(op), timeout_s_(timeout_s) {}

    std::vector<MPI_Request> requests;
    std::vector<int> counts, displs;

    bool test() override {
        int flag = 0;
        check_mpi(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &flag,
                              MPI_STATUSES_IGNORE),
                  op_);
        return flag != 0;
    }

    void wait() override {
        ActivityCollective busy(op_);  // what a lost peer's message names (peer_watch.h)
        if (timeout_s_ <= 0) {
            check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(),
                                  MPI_STATUSES_IGNORE),
                      op_);
            return;
        }
        using Clock = std::chrono::steady_clock;
        const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s_);
        while (!test()) {
            if (Clock::now() > deadline)
                throw Error(detail::concat(op_, " did not complete within ", timeout_s_,
                                           " s (MESHLM_COMM_TIMEOUT): another rank failed or "
                                           "stopped calling collectives"));
            sched_yield();  // ranks may share cores (--oversubscribe)
        }
    }

  private:
    const char* op_;
    double timeout_s_;
};

}  // namespace

double comm_timeout_from_env() {
    const char* v = std::getenv("MESHLM_COMM_TIMEOUT");
    if (!v || !*v) return 600;
    char* end = nullptr;
    double s = std::strtod(v, &end);
    if (*end != '\0' || s < 0)
        MESHLM_INVALID("MESHLM_COMM_TIMEOUT='", v, "': expected seconds >= 0 (0 = no timeout)");
    return s;
}

MpiComm::MpiComm(MPI_Comm comm, bool owned, double timeout_s)
    : comm_(comm), owned_(owned), timeout_s_(timeout_s) {
    check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

MpiComm::~MpiComm() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owned_ && !finalized) MPI_Comm_free(&comm_);
}

void MpiComm::barrier() {
    auto p = std::make_unique<MpiPending>("barrier", timeout_s_);
    p->requests.resize(1);
    check_mpi(MPI_Ibarrier(comm_, p->requests.data()), "MPI_Ibarrier");
    p->wait();
}

std::unique_ptr<Comm> MpiComm::split(int color, int key) {
    MESHLM_CHECK(color >= 0, "split: color must be >= 0, got ", color);
    MPI_Comm sub = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(comm_, color, key, &sub), "MPI_Comm_split");
    return std::make_unique<MpiComm>(sub, true, timeout_s_);
}

void MpiComm::abort(int code) {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);  // the whole job, not only this communicator
    std::_Exit(code);
}

CommRequest MpiComm::start_all_reduce(void* buf, std::size_t n, CommType t, ReduceOp op) {
    auto p = std::make_unique<MpiPending>("all_reduce", timeout_s_);
    auto* bytes = static_cast<char*>(buf);
    std::size_t at = 0;
    do {
        const int len = static_cast<int>(std::min(kMaxPiece, n - at));
        p->requests.emplace_back();
        check_mpi(MPI_Iallreduce(MPI_IN_PLACE, bytes + at * comm_type_size(t), len, mpi_type(t),
                                 mpi_op(op), comm_, &p->requests.back()),
                  "MPI_Iallreduce");
        at += static_cast<std::size_t>(len);
    } while (at < n);
    return CommRequest(std::move(p));
}

CommRequest MpiComm::start_reduce_scatter(const void* in, void* out, std::size_t n,
                                          std::span<const std::size_t> counts, CommType t) {
    auto p = std::make_unique<MpiPending>("reduce_scatter", timeout_s_);
    p->requests.resize(1);
    if (counts.empty()) {
        check_mpi(MPI_Ireduce_scatter_block(in, out, as_count(n, "reduce_scatter"), mpi_type(t),
                                            MPI_SUM, comm_, p->requests.data()),
                  "MPI_Ireduce_scatter_block");
    } else {
        std::size_t total = 0;
        for (std::size_t c : counts) {
            p->counts.push_back(as_count(c, "reduce_scatter"));
            total += c;
        }
        as_count(total, "reduce_scatter");
        check_mpi(MPI_Ireduce_scatter(in, out, p->counts.data(), mpi_type(t), MPI_SUM, comm_,
                                      p->requests.data()),
                  "MPI_Ireduce_scatter");
    }
    return CommRequest(std::move(p));
}

CommRequest MpiComm::start_all_gather(void* buf, std::size_t n, std::span<const std::size_t> counts,
                                      CommType t) {
    auto p = std::make_unique<MpiPending>("all_gather", timeout_s_);
    p->requests.resize(1);
    if (counts.empty()) {
        check_mpi(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, as_count(n, "all_gather"),
                                 mpi_type(t), comm_, p->requests.data()),
                  "MPI_Iallgather");
    } else {
        std::size_t at = 0;
        for (std::size_t c : counts) {
            p->counts.push_back(as_count(c, "all_gather"));
            p->displs.push_back(as_count(at, "all_gather"));
            at += c;
        }
        as_count(at, "all_gather");
        check_mpi(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, p->counts.data(),
                                  p->displs.data(), mpi_type(t), comm_, p->requests.data()),
                  "MPI_Iallgatherv");
    }
    return CommRequest(std::move(p));
}

CommRequest MpiComm::start_broadcast(void* buf, std::size_t n, CommType t, int root) {
    auto p = std::make_unique<MpiPending>("broadcast", timeout_s_);
    auto* bytes = static_cast<char*>(buf);
    std::size_t at = 0;
    do {
        const int len = static_cast<int>(std::min(kMaxPiece, n - at));
        p->requests.emplace_back();
        check_mpi(MPI_Ibcast(bytes + at * comm_type_size(t), len, mpi_type(t), root, comm_,
                             &p->requests.back()),
                  "MPI_Ibcast");
        at += static_cast<std::size_t>(len);
    } while (at < n);
    return CommRequest(std::move(p));
}

}  // namespace meshlm

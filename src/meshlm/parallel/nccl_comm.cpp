// NcclComm (parallel/nccl_comm.h): the NCCL calls behind Comm's collectives.
#include "meshlm/parallel/nccl_comm.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <sched.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "meshlm/core/error.h"
#include "meshlm/kernels/device.h"
#include "meshlm/parallel/bootstrap.h"

namespace meshlm {

namespace {

void check_nccl(ncclResult_t r, const char* call) {
    if (r != ncclSuccess) throw Error(detail::concat(call, " failed: ", ncclGetErrorString(r)));
}

void check_cuda(cudaError_t e, const char* call) {
    if (e != cudaSuccess)
        throw Error(detail::concat(call, " failed: ", cudaGetErrorName(e), " (",
                                   cudaGetErrorString(e), ")"));
}

// NCCL's type for t, and the element count in it; u16 moves as twice as many bytes.
ncclDataType_t nccl_type(CommType t, std::size_t& n, const char* op, bool reduce) {
    switch (t) {
        case CommType::f32:
            return ncclFloat32;
        case CommType::f64:
            return ncclFloat64;
        case CommType::i32:
            return ncclInt32;
        case CommType::i64:
            return ncclInt64;
        case CommType::u8:
            return ncclUint8;
        case CommType::u16:
            if (reduce)
                throw Error(detail::concat(op,
                                           ": NCCL has no 16-bit integer reduction (u16 "
                                           "holds bf16 bits; reduce them as f32)"));
            n *= 2;
            return ncclUint8;
    }
    throw Error(detail::concat(op, ": unknown element type"));
}

ncclRedOp_t nccl_op(ReduceOp op) {
    switch (op) {
        case ReduceOp::sum:
            return ncclSum;
        case ReduceOp::max:
            return ncclMax;
        case ReduceOp::min:
            return ncclMin;
    }
    return ncclSum;
}

// An NCCL group: end() launches it; a group left by an exception is ended quietly.
class Group {
  public:
    Group() { check_nccl(ncclGroupStart(), "ncclGroupStart"); }
    ~Group() {
        if (open_) ncclGroupEnd();
    }
    void end() {
        open_ = false;
        check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    }

  private:
    bool open_ = true;
};

// A collective enqueued on the communicator's stream: done when the event behind it passed.
class NcclPending final : public CommRequest::Pending {
  public:
    NcclPending(const char* op, ncclComm_t comm, cudaStream_t stream, double timeout_s)
        : op_(op), comm_(comm), timeout_s_(timeout_s) {
        check_cuda(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate");
        const cudaError_t e = cudaEventRecord(event_, stream);
        if (e != cudaSuccess) {
            cudaEventDestroy(event_);
            check_cuda(e, "cudaEventRecord");
        }
    }
    ~NcclPending() override { cudaEventDestroy(event_); }

    bool test() override {
        const cudaError_t e = cudaEventQuery(event_);
        if (e == cudaSuccess) return true;
        if (e != cudaErrorNotReady) check_cuda(e, op_);
        ncclResult_t async = ncclSuccess;
        check_nccl(ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError");
        if (async != ncclSuccess && async != ncclInProgress)
            throw Error(detail::concat(op_, " failed: ", ncclGetErrorString(async)));
        return false;
    }

    void wait() override {
        using Clock = std::chrono::steady_clock;
        const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s_);
        while (!test()) {
            if (timeout_s_ > 0 && Clock::now() > deadline)
                throw Error(detail::concat(op_, " did not complete within ", timeout_s_,
                                           " s (MESHLM_COMM_TIMEOUT): another rank failed or "
                                           "stopped calling collectives"));
            sched_yield();
        }
    }

  private:
    const char* op_;
    ncclComm_t comm_;
    double timeout_s_;
    cudaEvent_t event_ = nullptr;
};

}  // namespace

NcclComm::NcclComm(Comm& bootstrap, double timeout_s)
    : bootstrap_(&bootstrap), host_(&bootstrap), timeout_s_(timeout_s) {
    kernels::require_device(Device::cuda, "NcclComm");
    ncclUniqueId id{};
    if (bootstrap.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    bootstrap_broadcast(bootstrap,
                        std::span<std::uint8_t>(reinterpret_cast<std::uint8_t*>(&id), sizeof(id)));
    check_nccl(ncclCommInitRank(&comm_, bootstrap.size(), id, bootstrap.rank()),
               "ncclCommInitRank");
    init_stream();
}

NcclComm::NcclComm(ncclComm* comm, Comm& bootstrap, double timeout_s, std::unique_ptr<Comm> host)
    : comm_(comm),
      bootstrap_(&bootstrap),
      host_split_(std::move(host)),
      host_(host_split_.get()),
      timeout_s_(timeout_s) {
    init_stream();
}

void NcclComm::init_stream() {
    check_nccl(ncclCommUserRank(comm_, &rank_), "ncclCommUserRank");
    check_nccl(ncclCommCount(comm_, &size_), "ncclCommCount");
    check_cuda(cudaStreamCreate(&stream_), "cudaStreamCreate");  // blocking: ordered with stream 0
    check_cuda(cudaMalloc(&barrier_word_, sizeof(int)), "cudaMalloc");
    check_cuda(cudaMemset(barrier_word_, 0, sizeof(int)), "cudaMemset");
}

NcclComm::~NcclComm() {
    if (comm_) ncclCommDestroy(comm_);
    if (barrier_word_) cudaFree(barrier_word_);
    if (stream_) cudaStreamDestroy(stream_);
}

CommRequest NcclComm::started(const char* op) {
    return CommRequest(std::make_unique<NcclPending>(op, comm_, stream_, timeout_s_));
}

void NcclComm::barrier() {
    check_nccl(ncclAllReduce(barrier_word_, barrier_word_, 1, ncclInt32, ncclSum, comm_, stream_),
               "ncclAllReduce (barrier)");
    started("barrier").wait();
}

std::unique_ptr<Comm> NcclComm::split(int color, int key) {
    MESHLM_CHECK(color >= 0, "split: color must be >= 0, got ", color);
    // The host twin first: the same ranks split alike, collective over host_ (these ranks).
    std::unique_ptr<Comm> host = host_->split(color, key);
    ncclComm_t sub = nullptr;
    check_nccl(ncclCommSplit(comm_, color, key, &sub, nullptr), "ncclCommSplit");
    return std::unique_ptr<Comm>(new NcclComm(sub, *bootstrap_, timeout_s_, std::move(host)));
}

void NcclComm::abort(int code) {
    std::fflush(stdout);
    std::fflush(stderr);
    ncclCommAbort(comm_);
    comm_ = nullptr;
    bootstrap_->abort(code);
    std::_Exit(code);  // not reached: the bootstrap's abort ends the process
}

CommRequest NcclComm::start_all_reduce(void* buf, std::size_t n, CommType t, ReduceOp op) {
    const ncclDataType_t type = nccl_type(t, n, "all_reduce", true);
    check_nccl(ncclAllReduce(buf, buf, n, type, nccl_op(op), comm_, stream_), "ncclAllReduce");
    return started("all_reduce");
}

CommRequest NcclComm::start_reduce_scatter(const void* in, void* out, std::size_t n,
                                           std::span<const std::size_t> counts, CommType t) {
    if (counts.empty()) {
        const ncclDataType_t type = nccl_type(t, n, "reduce_scatter", true);
        check_nccl(ncclReduceScatter(in, out, n, type, ncclSum, comm_, stream_),
                   "ncclReduceScatter");
        return started("reduce_scatter");
    }
    // Uneven chunks: one reduce per rank, rooted at the chunk's owner, in one group.
    Group group;
    std::size_t at = 0;
    for (int r = 0; r < size_; ++r) {
        std::size_t c = counts[r];
        const std::size_t bytes = c * comm_type_size(t);
        const ncclDataType_t type = nccl_type(t, c, "reduce_scatter", true);
        if (c > 0)
            check_nccl(ncclReduce(static_cast<const char*>(in) + at, r == rank_ ? out : nullptr, c,
                                  type, ncclSum, r, comm_, stream_),
                       "ncclReduce (reduce_scatter)");
        at += bytes;
    }
    group.end();
    return started("reduce_scatter");
}

CommRequest NcclComm::start_all_gather(void* buf, std::size_t n,
                                       std::span<const std::size_t> counts, CommType t) {
    char* bytes = static_cast<char*>(buf);
    if (counts.empty()) {
        const std::size_t chunk = n * comm_type_size(t);
        const ncclDataType_t type = nccl_type(t, n, "all_gather", false);
        check_nccl(ncclAllGather(bytes + rank_ * chunk, bytes, n, type, comm_, stream_),
                   "ncclAllGather");  // in place: the send chunk sits at its rank's offset
        return started("all_gather");
    }
    // Uneven chunks: each rank broadcasts its chunk in place, in one group.
    Group group;
    std::size_t at = 0;
    for (int r = 0; r < size_; ++r) {
        std::size_t c = counts[r];
        const std::size_t chunk = c * comm_type_size(t);
        const ncclDataType_t type = nccl_type(t, c, "all_gather", false);
        if (c > 0)
            check_nccl(ncclBroadcast(bytes + at, bytes + at, c, type, r, comm_, stream_),
                       "ncclBroadcast (all_gather)");
        at += chunk;
    }
    group.end();
    return started("all_gather");
}

CommRequest NcclComm::start_broadcast(void* buf, std::size_t n, CommType t, int root) {
    const ncclDataType_t type = nccl_type(t, n, "broadcast", false);
    check_nccl(ncclBroadcast(buf, buf, n, type, root, comm_, stream_), "ncclBroadcast");
    return started("broadcast");
}

}  // namespace meshlm

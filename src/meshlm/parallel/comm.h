// Comm: the one interface every distributed operation goes through (MPI, NCCL for CUDA runs, and
// a size-1 LocalComm for single processes). The trainer never calls MPI itself.
//
// A communicator's buffers live on its device(): host memory for MPI and LocalComm, device
// memory for NcclComm. host() is the communicator of the same ranks, in the same order, for host
// buffers (a step's loss, a scored count, a norm's partial sums): the communicator itself on the
// CPU, NcclComm's MPI twin on a GPU.
//
// Collectives are typed over CommElement (float, double, int32, int64, uint8), blocking or
// non-blocking (`i*` forms return a CommRequest; its buffers must stay alive and untouched until
// wait() or test() says it is done). Every rank of a communicator must call the same
// collectives in the same order with matching sizes.
//
// Each Comm counts the bytes its collectives send from this rank, by the ring-algorithm
// convention of parallel/traffic.h, so a trainer can log traffic per step and compare it with
// theory; the count is taken when a collective starts.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>

#include "meshlm/core/tensor.h"

namespace meshlm {

enum class CommType { f32, f64, i32, i64, u8, u16 };
std::size_t comm_type_size(CommType t);

enum class ReduceOp { sum, max, min };

// What the byte counters are kept per.
enum class CommOp { all_reduce, reduce_scatter, all_gather, broadcast };
inline constexpr int kCommOpCount = 4;
const char* comm_op_name(CommOp op);

template <typename T>
inline constexpr bool kIsCommElement =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
    std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::uint8_t> ||
    std::is_same_v<T, std::uint16_t>;  // u16: bf16 values as their bits
template <typename T>
concept CommElement = kIsCommElement<T>;

template <CommElement T>
constexpr CommType comm_type_of() {
    if constexpr (std::is_same_v<T, float>) return CommType::f32;
    if constexpr (std::is_same_v<T, double>) return CommType::f64;
    if constexpr (std::is_same_v<T, std::int32_t>) return CommType::i32;
    if constexpr (std::is_same_v<T, std::int64_t>) return CommType::i64;
    if constexpr (std::is_same_v<T, std::uint16_t>) return CommType::u16;
    return CommType::u8;
}

// Handle of a non-blocking collective. Default-constructed (or after wait()) it is complete.
// Destroying a pending request waits for it: MPI forbids abandoning a started collective, and
// its buffers must outlive it.
class CommRequest {
  public:
    // What a backend implements for one started operation.
    class Pending {
      public:
        virtual ~Pending() = default;
        virtual bool test() = 0;  // true once complete; drives progress
        virtual void wait() = 0;  // throws meshlm::Error on failure or timeout
    };

    CommRequest() = default;
    explicit CommRequest(std::unique_ptr<Pending> pending) : pending_(std::move(pending)) {}
    CommRequest(CommRequest&&) noexcept = default;
    CommRequest& operator=(CommRequest&& other) noexcept;
    ~CommRequest();

    void wait();
    bool test();
    bool done() const { return !pending_; }
    // The trace event of a wait() that blocks (core/trace.h): "<op> wait", a string literal.
    void set_wait_name(const char* name) { wait_name_ = name; }

  private:
    void finish_quietly() noexcept;
    std::unique_ptr<Pending> pending_;
    const char* wait_name_ = "collective wait";
};

class Comm {
  public:
    virtual ~Comm() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    virtual const char* backend() const = 0;  // "local", "mpi", "nccl"
    // Where the buffers of this communicator's collectives must live.
    virtual Device device() const { return Device::cpu; }
    // The same ranks for host buffers (see above).
    virtual Comm& host() { return *this; }

    // buf[0..n) = element-wise op over ranks, in place.
    template <CommElement T>
    void all_reduce_sum(T* buf, std::size_t n) {
        iall_reduce_sum(buf, n).wait();
    }
    template <CommElement T>
    CommRequest iall_reduce_sum(T* buf, std::size_t n) {
        return start_all_reduce_counted(buf, n, comm_type_of<T>(), ReduceOp::sum);
    }
    template <CommElement T>
    void all_reduce_max(T* buf, std::size_t n) {
        start_all_reduce_counted(buf, n, comm_type_of<T>(), ReduceOp::max).wait();
    }
    template <CommElement T>
    void all_reduce_min(T* buf, std::size_t n) {
        start_all_reduce_counted(buf, n, comm_type_of<T>(), ReduceOp::min).wait();
    }

    // in: n * size() elements, chunk r = [r*n, (r+1)*n); out: n elements = sum over ranks of
    // this rank's chunk. `in` and `out` must not overlap.
    template <CommElement T>
    void reduce_scatter_sum(const T* in, T* out, std::size_t n) {
        ireduce_scatter_sum(in, out, n).wait();
    }
    template <CommElement T>
    CommRequest ireduce_scatter_sum(const T* in, T* out, std::size_t n) {
        return start_reduce_scatter_counted(in, out, n, {}, comm_type_of<T>());
    }
    // Uneven chunks (a flat buffer whose size does not divide): counts[r] elements for rank r,
    // laid out one after another in `in`; out gets counts[rank()] elements.
    template <CommElement T>
    void reduce_scatter_sum(const T* in, T* out, std::span<const std::size_t> counts) {
        ireduce_scatter_sum(in, out, counts).wait();
    }
    template <CommElement T>
    CommRequest ireduce_scatter_sum(const T* in, T* out, std::span<const std::size_t> counts) {
        return start_reduce_scatter_counted(in, out, 0, counts, comm_type_of<T>());
    }

    // In place: buf holds n * size() elements; this rank's chunk, at [rank*n, (rank+1)*n), is
    // sent to every rank and every other chunk is received.
    template <CommElement T>
    void all_gather(T* buf, std::size_t n) {
        iall_gather(buf, n).wait();
    }
    template <CommElement T>
    CommRequest iall_gather(T* buf, std::size_t n) {
        return start_all_gather_counted(buf, n, {}, comm_type_of<T>());
    }
    // Uneven chunks: rank r's chunk has counts[r] elements, the chunks laid out in rank order.
    template <CommElement T>
    void all_gather(T* buf, std::span<const std::size_t> counts) {
        iall_gather(buf, counts).wait();
    }
    template <CommElement T>
    CommRequest iall_gather(T* buf, std::span<const std::size_t> counts) {
        return start_all_gather_counted(buf, 0, counts, comm_type_of<T>());
    }

    // buf[0..n) of rank `root` copied to every rank.
    template <CommElement T>
    void broadcast(T* buf, std::size_t n, int root) {
        ibroadcast(buf, n, root).wait();
    }
    template <CommElement T>
    CommRequest ibroadcast(T* buf, std::size_t n, int root) {
        return start_broadcast_counted(buf, n, comm_type_of<T>(), root);
    }
    // Any trivially copyable bytes (a struct, a string's characters).
    void broadcast_bytes(void* buf, std::size_t bytes, int root) {
        broadcast(static_cast<std::uint8_t*>(buf), bytes, root);
    }

    virtual void barrier() = 0;

    // Sub-communicators: ranks with the same color form one, ordered by key (then by rank).
    // Collective over this communicator.
    virtual std::unique_ptr<Comm> split(int color, int key) = 0;

    // Ends every process of the job with `code` (MPI_Abort of the world), so that no rank is
    // left waiting in a collective. Does not return.
    [[noreturn]] virtual void abort(int code) = 0;

    // Bytes this rank's collectives sent since the last reset (parallel/traffic.h convention).
    std::uint64_t bytes_sent() const;
    std::uint64_t bytes_sent(CommOp op) const { return bytes_[static_cast<int>(op)]; }
    void reset_bytes_sent() { bytes_.fill(0); }

  protected:
    // Backends implement these; arguments are already validated. `counts` is empty for the
    // even forms (chunk `n` for every rank).
    virtual CommRequest start_all_reduce(void* buf, std::size_t n, CommType t, ReduceOp op) = 0;
    virtual CommRequest start_reduce_scatter(const void* in, void* out, std::size_t n,
                                             std::span<const std::size_t> counts, CommType t) = 0;
    virtual CommRequest start_all_gather(void* buf, std::size_t n,
                                         std::span<const std::size_t> counts, CommType t) = 0;
    virtual CommRequest start_broadcast(void* buf, std::size_t n, CommType t, int root) = 0;

  private:
    CommRequest start_all_reduce_counted(void* buf, std::size_t n, CommType t, ReduceOp op);
    CommRequest start_reduce_scatter_counted(const void* in, void* out, std::size_t n,
                                             std::span<const std::size_t> counts, CommType t);
    CommRequest start_all_gather_counted(void* buf, std::size_t n,
                                         std::span<const std::size_t> counts, CommType t);
    CommRequest start_broadcast_counted(void* buf, std::size_t n, CommType t, int root);
    void count(CommOp op, std::uint64_t bytes) { bytes_[static_cast<int>(op)] += bytes; }

    std::array<std::uint64_t, kCommOpCount> bytes_{};
};

}  // namespace meshlm

// NcclComm: Comm's collectives with NCCL, over device buffers (CUDA build only). One process per
// GPU: each rank makes its GPU current (kernels::set_cuda_device) before joining. The
// communicator is bootstrapped over an existing Comm (MPI): rank 0 makes the ncclUniqueId and
// bootstrap_broadcast hands it to every rank (parallel/bootstrap.h).
//
// Every pointer a collective takes is a device pointer. Collectives run on the communicator's
// own stream, a blocking one, so they wait for kernels already launched on the legacy default
// stream and kernels launched after them wait in turn; a request is done when the event
// recorded behind the collective has passed. wait() polls with a deadline (timeout_s, 0 = no
// limit) and checks NCCL's asynchronous error, so a dead peer turns into an error naming the
// operation instead of a hang. u16 (bf16 bits) moves as bytes; a reduction over u16 is refused.
//
// host() is the bootstrap for the communicator built over it, and for one split from it the
// bootstrap's split of the same color and key: the same ranks, for host buffers.
//
// Untested on hardware so far: see the README's "CUDA build" section.
#pragma once

#include <memory>

#include "meshlm/parallel/comm.h"

struct ncclComm;
struct CUstream_st;

namespace meshlm {

class NcclComm final : public Comm {
  public:
    // Collective over `bootstrap`: every one of its ranks joins, as the same rank. `bootstrap`
    // must outlive this communicator and those split from it (abort() ends the job through it).
    NcclComm(Comm& bootstrap, double timeout_s);
    ~NcclComm() override;
    NcclComm(const NcclComm&) = delete;
    NcclComm& operator=(const NcclComm&) = delete;

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    const char* backend() const override { return "nccl"; }
    Device device() const override { return Device::cuda; }
    Comm& host() override { return *host_; }

    void barrier() override;
    // ncclCommSplit: ranks with the same color form one communicator, ordered by key.
    std::unique_ptr<Comm> split(int color, int key) override;
    [[noreturn]] void abort(int code) override;

  protected:
    CommRequest start_all_reduce(void* buf, std::size_t n, CommType t, ReduceOp op) override;
    CommRequest start_reduce_scatter(const void* in, void* out, std::size_t n,
                                     std::span<const std::size_t> counts, CommType t) override;
    CommRequest start_all_gather(void* buf, std::size_t n, std::span<const std::size_t> counts,
                                 CommType t) override;
    CommRequest start_broadcast(void* buf, std::size_t n, CommType t, int root) override;

  private:
    NcclComm(ncclComm* comm, Comm& bootstrap, double timeout_s, std::unique_ptr<Comm> host);
    void init_stream();
    CommRequest started(const char* op);

    ncclComm* comm_ = nullptr;
    CUstream_st* stream_ = nullptr;
    int* barrier_word_ = nullptr;  // one device int for barrier()
    Comm* bootstrap_;
    std::unique_ptr<Comm> host_split_;  // a split's host twin (the root's is the bootstrap)
    Comm* host_;
    double timeout_s_;
    int rank_ = 0, size_ = 1;
};

}  // namespace meshlm

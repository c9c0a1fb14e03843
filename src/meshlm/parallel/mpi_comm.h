// MpiComm: Comm over an MPI communicator (Open MPI). Collectives start as MPI non-blocking
// operations (MPI_Iallreduce, MPI_Ireduce_scatter[_block], MPI_Iallgather[v], MPI_Ibcast); the
// blocking forms wait on them. A wait polls with a deadline (timeout_s; 0 = wait forever) and
// throws naming the rank and the operation when it passes, so a peer that hangs or died turns
// into an error on every rank instead of a silent hang. MPI errors are returned, not fatal, and
// thrown as meshlm::Error. MPI is called only from the thread that initialized it (FUNNELED).
#pragma once

#include "meshlm/parallel/mpi_api.h"

#include "meshlm/parallel/comm.h"

namespace meshlm {

// Seconds a collective may wait: env MESHLM_COMM_TIMEOUT if set (0 = forever), else 600.
double comm_timeout_from_env();

class MpiComm final : public Comm {
  public:
    // Wraps `comm`; frees it at destruction when `owned` (the results of split()).
    MpiComm(MPI_Comm comm, bool owned, double timeout_s);
    ~MpiComm() override;
    MpiComm(const MpiComm&) = delete;
    MpiComm& operator=(const MpiComm&) = delete;

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    const char* backend() const override { return "mpi"; }
    MPI_Comm handle() const { return comm_; }
    double timeout_s() const { return timeout_s_; }
    void set_timeout_s(double s) { timeout_s_ = s; }

    void barrier() override;
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
    MPI_Comm comm_;
    bool owned_;
    int rank_ = 0, size_ = 1;
    double timeout_s_;
};

}  // namespace meshlm

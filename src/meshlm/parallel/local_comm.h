// LocalComm: the communicator of a single process (size 1). Every collective is a copy or a
// no-op, sends nothing and completes at once; a run without a launcher uses it and never
// touches MPI.
#pragma once

#include "meshlm/parallel/comm.h"

namespace meshlm {

class LocalComm final : public Comm {
  public:
    int rank() const override { return 0; }
    int size() const override { return 1; }
    const char* backend() const override { return "local"; }
    void barrier() override {}
    std::unique_ptr<Comm> split(int color, int key) override;
    [[noreturn]] void abort(int code) override;

  protected:
    CommRequest start_all_reduce(void* buf, std::size_t n, CommType t, ReduceOp op) override;
    CommRequest start_reduce_scatter(const void* in, void* out, std::size_t n,
                                     std::span<const std::size_t> counts, CommType t) override;
    CommRequest start_all_gather(void* buf, std::size_t n, std::span<const std::size_t> counts,
                                 CommType t) override;
    CommRequest start_broadcast(void* buf, std::size_t n, CommType t, int root) override;
};

}  // namespace meshlm

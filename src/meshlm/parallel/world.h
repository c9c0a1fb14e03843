// The world communicator and MPI's lifetime. MPI is initialized only when a launcher started
// this process (mpirun / mpiexec, or srun --mpi=pmix); a plain `meshlm ...` gets a LocalComm,
// needs no launcher and starts fast.
//
//   MpiGuard mpi;                            // first thing in main; finalizes MPI at the end
//   auto world = make_world_comm(mpi);       // declared after the guard: destroyed before it
#pragma once

#include <memory>
#include <string>

#include "meshlm/parallel/comm.h"

namespace meshlm {

// True if an MPI launcher started this process (OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_RANK set).
bool launched_by_mpi();

// The MPI library's own first line of MPI_Get_library_version ("Open MPI v4.1.4, ..."), which
// may be asked before MPI is initialized; for `meshlm --version`.
std::string mpi_library_version();

// Initializes MPI (MPI_THREAD_FUNNELED: only the main thread calls MPI) if launched_by_mpi(),
// and finalizes it at destruction. After MPI_Abort nothing is finalized: the process is gone.
class MpiGuard {
  public:
    MpiGuard();
    ~MpiGuard();
    MpiGuard(const MpiGuard&) = delete;
    MpiGuard& operator=(const MpiGuard&) = delete;
    bool active() const { return active_; }

  private:
    bool active_ = false;
};

// Every rank of the job (MpiComm over MPI_COMM_WORLD, timeout from MESHLM_COMM_TIMEOUT), or a
// LocalComm when MPI is not active. Throws if srun started several tasks that MPI does not see
// as one job (each would otherwise train alone as rank 0 of 1).
std::unique_ptr<Comm> make_world_comm(const MpiGuard& mpi);

}  // namespace meshlm

// What a distributed run does when one rank fails, so that nothing hangs:
//   1. The rank that caught the error prints it once to stderr ("error: rank R/N: ..."; plain
//      "error: ..." for a single process). Ranks that did not fail print nothing.
//   2. It ends the whole job with Comm::abort (MPI_Abort on the world): mpirun kills every
//      other rank, which may be blocked in a collective, and exits non-zero.
// A rank that hangs instead of throwing is caught by the collective timeout of its peers
// (MESHLM_COMM_TIMEOUT), which throw and come here. main's top-level catch calls this:
//
//   MpiGuard mpi;
//   auto world = make_world_comm(mpi);
//   try { ... } catch (const std::exception& e) { return fail_all_ranks(*world, e, 1); }
#pragma once

#include <exception>

#include "meshlm/parallel/comm.h"

namespace meshlm {

enum class FailureScope {
    this_rank,         // an error of this rank alone (a step that threw)
    maybe_every_rank,  // an error every rank may hit alike (a bad config): rank 0 reports it
                       // for all; another rank reports its own only if rank 0 has not ended
                       // the job within a grace period (then it was not alike after all)
};

// Prints `e` as above; aborts every rank with `exit_code` when world.size() > 1, otherwise
// returns `exit_code` for main to return.
int fail_all_ranks(Comm& world, const std::exception& e, int exit_code,
                   FailureScope scope = FailureScope::this_rank);

}  // namespace meshlm

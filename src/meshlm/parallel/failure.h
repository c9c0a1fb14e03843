// What a distributed run does when one rank fails, so that nothing hangs:
//   1. The rank that caught the error prints it once to stderr ("error: rank R/N: ..."; plain
//      "error: ..." for a single process). Ranks that did not fail print nothing.
//   2. It ends the whole job with Comm::abort (MPI_Abort on the world): mpirun kills every
//      other rank, which may be blocked in a collective, and exits non-zero.
// A rank that hangs instead of throwing is caught by the collective timeout of its peers
// (MESHLM_COMM_TIMEOUT), which throw and come here. main's top-level catch calls this.
#pragma once

#include <exception>

#include "meshlm/parallel/comm.h"

namespace meshlm {

// Prints `e` as above; aborts every rank with `exit_code` when world.size() > 1, otherwise
// returns `exit_code` for main to return.
int fail_all_ranks(Comm& world, const std::exception& e, int exit_code);

}  // namespace meshlm

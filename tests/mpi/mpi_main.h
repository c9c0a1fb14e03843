// The main() of the gtest binaries that run on every rank under mpirun (mpi_main.cpp): MPI is
// initialized around the tests, rank 0 prints the usual report and the other ranks only their
// failures, prefixed by the rank.
#pragma once

#include "meshlm/parallel/comm.h"

namespace meshlm::test {

// Every rank of the job.
Comm& mpi_world();

}  // namespace meshlm::test

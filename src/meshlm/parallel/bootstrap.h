// The bootstrap of a communicator built beside an existing one: NCCL's ncclUniqueId (128 bytes)
// is made on rank 0 and must reach every rank before any of them can join. This is that step,
// over any Comm (MPI in practice), compiled in every build so the MPI tests cover it without a
// GPU.
#pragma once

#include <cstdint>
#include <span>

#include "meshlm/parallel/comm.h"

namespace meshlm {

// Copies `root`'s bytes of `blob` into every rank's `blob`. Collective over `comm`. Every rank
// must pass the same size: the sizes are compared first, and a mismatch throws meshlm::Error on
// every rank (naming the sizes) instead of tearing the blob or hanging.
void bootstrap_broadcast(Comm& comm, std::span<std::uint8_t> blob, int root = 0);

}  // namespace meshlm

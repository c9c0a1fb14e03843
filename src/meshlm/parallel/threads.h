// Threads per rank: the cores this rank may use, not all cores of the host. Several ranks on
// one host that may run on the same CPUs (mpirun with --oversubscribe, or no binding) share
// them; a rank bound to its own cores (mpirun --bind-to core, srun --cpu-bind) keeps them.
#pragma once

#include "meshlm/core/threads.h"  // affinity_cpus
#include "meshlm/parallel/comm.h"

namespace meshlm {

// max(1, affinity_cpus() / k), where k counts the ranks of `world` on this host (this one
// included) whose affinity masks overlap this rank's. Collective over `world` (an all-gather
// of one small record per rank, counted in world.bytes_sent()).
int threads_per_rank(Comm& world);

}  // namespace meshlm

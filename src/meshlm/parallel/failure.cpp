#include "meshlm/parallel/failure.h"

#include <chrono>
#include <cstdio>
#include <thread>

#include "meshlm/parallel/peer_watch.h"

namespace meshlm {

// Long enough for rank 0 to print and MPI_Abort to reach this rank.
constexpr auto kAlikeGrace = std::chrono::seconds(5);

int fail_all_ranks(Comm& world, const std::exception& e, int exit_code, FailureScope scope) {
    if (world.size() == 1) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return exit_code;
    }
    if (scope == FailureScope::maybe_every_rank && world.rank() != 0)
        std::this_thread::sleep_for(kAlikeGrace);
    std::fprintf(stderr, "error: rank %d/%d: %s\n", world.rank(), world.size(), e.what());
    std::fflush(stderr);
    PeerWatch::announce_failure();  // its end, and the job's, are no lost rank
    world.abort(exit_code);         // does not return
    return exit_code;
}

}  // namespace meshlm

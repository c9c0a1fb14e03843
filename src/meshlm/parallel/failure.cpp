#include "meshlm/parallel/failure.h"

#include <cstdio>

namespace meshlm {

int fail_all_ranks(Comm& world, const std::exception& e, int exit_code) {
    if (world.size() > 1)
        std::fprintf(stderr, "error: rank %d/%d: %s\n", world.rank(), world.size(), e.what());
    else
        std::fprintf(stderr, "error: %s\n", e.what());
    std::fflush(stderr);
    if (world.size() > 1) world.abort(exit_code);
    return exit_code;
}

}  // namespace meshlm

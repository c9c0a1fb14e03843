#include "meshlm/parallel/fault.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "meshlm/core/error.h"

namespace meshlm {

void fault_point(int world_rank, std::string_view point, long step) {
    const char* rank = std::getenv("MESHLM_FAULT_RANK");
    const char* at = std::getenv("MESHLM_FAULT_AT");
    if (!rank || !at) return;
    if (std::string_view(rank) != "all" && std::atoi(rank) != world_rank) return;
    std::string here(point);
    if (std::string_view(at) != here) {
        if (step < 0) return;
        here.append(":").append(std::to_string(step));
        if (std::string_view(at) != here) return;
    }
    const char* kind = std::getenv("MESHLM_FAULT_KIND");
    if (kind && std::string_view(kind) == "hang") {
        std::fprintf(stderr, "fault: rank %d hangs at %s\n", world_rank, here.c_str());
        std::fflush(stderr);  // a test waits for this line
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    throw Error(detail::concat("injected fault at ", here, " on rank ", world_rank));
}

}  // namespace meshlm

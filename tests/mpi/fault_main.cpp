// A stand-in for a training job, run by fault_test.cpp: five "steps" of gradient all-reduce,
// with a fault_point each step, and main's error policy (parallel/failure.h). With
// MESHLM_FAULT_RANK / MESHLM_FAULT_AT set, one rank (or all) fails and the whole job must end.
// With --alike the failure is reported as one every rank may share (FailureScope).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/parallel/failure.h"
#include "meshlm/parallel/fault.h"
#include "meshlm/parallel/world.h"

int main(int argc, char** argv) {
    const bool alike = argc > 1 && std::string(argv[1]) == "--alike";
    meshlm::MpiGuard mpi;
    auto world = meshlm::make_world_comm(mpi);
    try {
        std::vector<float> grads(4096);
        for (long step = 1; step <= 5; ++step) {
            for (float& g : grads) g = 1.0f;
            world->all_reduce_sum(grads.data(), grads.size());
            MESHLM_CHECK(grads[0] == static_cast<float>(world->size()), "bad all-reduce");
            meshlm::fault_point(world->rank(), "step", step);
        }
        world->barrier();
        if (world->rank() == 0) std::printf("all steps done on %d ranks\n", world->size());
        return 0;
    } catch (const std::exception& e) {
        return meshlm::fail_all_ranks(
            *world, e, 3,
            alike ? meshlm::FailureScope::maybe_every_rank : meshlm::FailureScope::this_rank);
    }
}

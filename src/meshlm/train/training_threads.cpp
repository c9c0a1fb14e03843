#include "meshlm/train/training_threads.h"

#include <ostream>

#include "meshlm/core/threads.h"
#include "meshlm/parallel/threads.h"

namespace meshlm {

// Unlike sample and serve, training does not leave busy CPUs to other processes by itself: the
// thread count must not change with the load of the moment. The short OpenMP spin
// (core/omp_wait_policy.h) keeps the extra thread from costing more than it brings; the run says
// so and how to choose.
int training_threads(const TrainConfig& tc, Comm& world, std::ostream& out) {
    if (tc.threads > 0) {
        set_thread_count(tc.threads);
        return tc.threads;
    }
    if (world.size() > 1) {
        set_thread_count(threads_per_rank(world));
        return thread_count();
    }
    const int cpus = available_cpus(), free = cpus_free_of_other_work(cpus);
    if (free < cpus)
        out << "note: " << cpus - free << " of " << cpus
            << " CPUs busy with other processes; training keeps " << cpus
            << " threads, since its losses depend on the thread count (--config.train.threads="
            << free << " to leave them alone)\n";
    set_thread_count(cpus);
    return cpus;
}

}  // namespace meshlm

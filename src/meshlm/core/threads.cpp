#include "meshlm/core/threads.h"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "meshlm/core/cpu_load.h"
#include "meshlm/core/error.h"

namespace meshlm {

void set_thread_count(int n) {
    MESHLM_CHECK(n >= 1, "thread count must be >= 1, got ", n);
    omp_set_dynamic(0);
    omp_set_num_threads(n);
}

int thread_count() {
    return omp_get_max_threads();
}

int affinity_cpus() {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
    return 1;
}

int available_cpus() {
    const int cpus = affinity_cpus(), quota = cgroup_cpu_quota();
    return std::max(1, quota > 0 ? std::min(cpus, quota) : cpus);
}

int cpus_free_of_other_work(int cpus) {
    const int online = std::max(cpus, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
    return std::clamp(online - busy_cpus_elsewhere(), 1, cpus);
}

int use_inference_threads(int requested, std::ostream& note) {
    if (requested > 0) {
        set_thread_count(requested);
        return requested;
    }
    const int cpus = available_cpus(), threads = cpus_free_of_other_work(cpus);
    if (threads < cpus)
        note << "note: " << cpus - threads << " of " << cpus
             << " CPUs busy with other processes; using " << threads
             << (threads == 1 ? " thread" : " threads") << " (--threads N to choose)\n";
    set_thread_count(threads);
    return threads;
}

int use_inference_threads(int requested) {
    if (isatty(STDERR_FILENO)) return use_inference_threads(requested, std::cerr);
    std::ostream quiet(nullptr);
    return use_inference_threads(requested, quiet);
}

}  // namespace meshlm

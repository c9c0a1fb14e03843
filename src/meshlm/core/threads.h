// The process's thread count for compute: one OpenMP pool, shared by our CPU kernels and
// oneDNN's GEMM (built on the same OpenMP runtime). Commands set it once, from --threads or
// from the CPUs they may use.
#pragma once

#include <ostream>

namespace meshlm {

void set_thread_count(int n);  // n >= 1
int thread_count();

// CPUs in this process's affinity mask (sched_getaffinity).
int affinity_cpus();

// The CPUs this process may use: its affinity mask, capped by its cgroup's CPU quota.
int available_cpus();

// `cpus` (the available CPUs) less those other processes keep busy now (at least one). Other
// processes are taken to run outside this process's CPUs first (an affinity mask or a quota smaller
// than the machine), and on them only when the machine has no other room.
int cpus_free_of_other_work(int cpus = available_cpus());

// Threads for a command that decodes or scores (sample, eval, serve), set as the pool's size:
// `requested` when > 0; otherwise the available CPUs less those other processes keep busy (at
// least one): a thread sharing a core with another process stalls every parallel region it
// is part of. Decoded tokens and scores do not depend on the thread count. Says on `note` when
// it leaves CPUs to other processes; the one-argument form says it on stderr when that is a
// terminal (a log or a script's captured output gets nothing).
int use_inference_threads(int requested, std::ostream& note);
int use_inference_threads(int requested);

}  // namespace meshlm

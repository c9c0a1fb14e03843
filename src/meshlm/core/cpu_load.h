// What else is running on this machine, so that a command does not start more compute threads
// than there are cores free for them, and how many cores a container's CPU quota grants.
#pragma once

#include <string_view>

namespace meshlm {

// The "procs_running" count of /proc/stat's text (runnable threads on the whole machine, this
// one included); -1 when the line is missing or malformed.
int parse_procs_running(std::string_view proc_stat);

// cgroup v2 cpu.max ("QUOTA PERIOD" or "max PERIOD"): the CPUs the quota grants, rounded up;
// 0 when there is no quota or the text is malformed.
int parse_cpu_quota(std::string_view cpu_max);

// The CPUs this process's cgroup quota grants (0: no quota, or no cgroup v2).
int cgroup_cpu_quota();

// Cores held by other processes now: the fewest runnable threads seen in a few reads of
// /proc/stat over ~10 ms (a process that keeps a core busy is in every read; short-lived
// ones are not), less this process's one running thread. 0 where /proc/stat is unreadable.
int busy_cpus_elsewhere();

}  // namespace meshlm

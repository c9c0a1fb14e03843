// How long OpenMP's idle threads spin before they sleep. libgomp's default (spin 300,000 times,
// about a millisecond, then sleep) is fastest only while nothing else runs: when another process
// holds a core, a spinning thread burns its time slice waiting for a partner that is not
// running, and `sample` on the default model took 9.9 s instead of 0.1 s next to a compile.
// `OMP_WAIT_POLICY=PASSIVE` (sleep at once) cures that but costs a wake-up per parallel region.
// meshlm spins briefly (GOMP_SPINCOUNT=kDefaultSpinCount: a few microseconds, enough for the
// gaps between the back-to-back regions of a step) and then sleeps; bench/busy_machine.sh has
// the measurements that chose it.
//
// libgomp reads these variables once, when it is loaded (before main), so the default can only
// take effect through the environment of a fresh image: apply_default_wait_policy() puts it
// there and re-executes the binary once. A user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT is kept.
#pragma once

#include <string>

namespace meshlm {

inline constexpr int kDefaultSpinCount = 300;

// First thing in main (before threads or MPI exist): when neither OMP_WAIT_POLICY nor
// GOMP_SPINCOUNT is set, sets GOMP_SPINCOUNT and re-executes /proc/self/exe with the same
// arguments. Returns (doing nothing) when a variable is set, under valgrind (whose re-executed
// child would run natively), or when the exec fails.
void apply_default_wait_policy(char** argv);

// The policy in effect, for --version: "GOMP_SPINCOUNT=300 (meshlm's default)",
// "OMP_WAIT_POLICY=PASSIVE (from the environment)", or libgomp's default.
std::string wait_policy_text();

}  // namespace meshlm

// Processes that tests start in the background and signal: `meshlm train` (or mpirun running
// it) writing to a log, the ranks an mpirun started, and what a run has done so far (from its
// log and its checkpoints). Used by the kill and stop tests (checkpoint_test, stop_resume_test,
// dying_rank_test).
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace meshlm::test {

// `cmd` in the background through a shell that execs it (so signals reach the command itself),
// stdin from /dev/null, stdout and stderr to `log`; its pid (-1 if it cannot start).
pid_t spawn_logged(const std::string& cmd, const std::string& log);

// A child process's exit, collected once.
struct Child {
    pid_t pid = -1;
    int status = 0;
    bool done = false;
    bool exited();         // true once it has ended (collects it)
    void kill_and_wait();  // SIGKILL unless it has ended, then collects it
};

// The pids whose parent is `parent` (the ranks mpirun started).
std::vector<pid_t> children_of(pid_t parent);
// The world rank of an MPI rank's process (OMPI_COMM_WORLD_RANK in its environment; -1: none).
int mpi_rank_of(pid_t pid);

// Whether process `pid` has ended: gone, or a zombie its parent has not collected yet.
bool process_ended(pid_t pid);

// Polls `ready` every 100 ms for up to `seconds`; whether it became true.
bool wait_for(const std::function<bool()>& ready, double seconds);

// The step of a run's latest checkpoint (RUN/checkpoints/latest; 0: none).
long latest_checkpoint_step(const std::string& run);
// The last step a trainer's console output shows done ("step N/M | loss"; 0: none yet). A
// run's metrics.jsonl would not do: until a resume trims it, it still holds the steps a killed
// start logged.
long last_step_logged(const std::string& log);

}  // namespace meshlm::test

// How this process was started, for the commands meshlm prints for a person to paste (a stopped
// run's resume command): the executable's real path, since `meshlm` is often not on PATH when
// the run used build/meshlm, and the MPI launcher line with its own flags (--oversubscribe,
// --allow-run-as-root, hosts), so the printed command runs as printed.
#pragma once

#include <string>

namespace meshlm {

// This process's executable as an absolute path (/proc/self/exe); "meshlm" where unknown.
std::string self_executable();

// The launcher words before the program on the command line that started this process, e.g.
// "mpirun --allow-run-as-root -np 2": read from the nearest ancestor process that is an MPI
// launcher (mpirun, mpiexec, orterun, prterun). Without one: "" for one rank, else
// "mpirun -np RANKS" (with --allow-run-as-root when running as root, which mpirun requires).
std::string launcher_prefix(int ranks);

// `word` quoted for a POSIX shell when it holds anything but [A-Za-z0-9_./=:,+@%-].
std::string shell_quote(const std::string& word);

// "[launcher_prefix] <self_executable> ARGS", where `args` is shell text (quote its paths with
// shell_quote).
std::string relaunch_command(int ranks, const std::string& args);

}  // namespace meshlm

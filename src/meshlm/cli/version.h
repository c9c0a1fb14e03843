// `meshlm --version`: what a bug report needs to say which meshlm ran where.
#pragma once

#include <string>

namespace meshlm {

// Defined in the file CMake generates at build time (cmake/git_commit.cmake), linked into the
// `meshlm` executable only: the source tree's git commit, "-dirty" with uncommitted changes.
const char* build_commit();

// Several lines: the version and `commit`, whether CUDA is built in, the CPU features the
// kernels use, and the oneDNN and MPI library versions.
std::string version_text(const std::string& commit);

}  // namespace meshlm

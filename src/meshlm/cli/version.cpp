#include "meshlm/cli/version.h"

#include "meshlm/core/omp_wait_policy.h"
#include "meshlm/core/threads.h"
#include "meshlm/kernels/device.h"
#include "meshlm/parallel/world.h"

namespace meshlm {

std::string version_text(const std::string& commit) {
    const bool cuda = kernels::cuda_built();
    return std::string("meshlm ") + MESHLM_VERSION + "\n" +  //
           "commit: " + commit + "\n" +                      //
           "CUDA: " + (cuda ? "built in" : "not built (configure with -DMESHLM_CUDA=ON)") + "\n" +
           "CPU features: " + kernels::cpu_features() + "\n" +
           "GEMM: " + kernels::cpu_gemm_library_version() + "\n" + "MPI: " + mpi_library_version() +
           "\n" + "OpenMP wait: " + wait_policy_text() + "\n" +  //
           "CPUs: " + std::to_string(available_cpus()) + " available";
}

}  // namespace meshlm

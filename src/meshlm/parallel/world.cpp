#include "meshlm/parallel/world.h"

#include "meshlm/parallel/mpi_api.h"

#include <cstdlib>
#include <string>

#include "meshlm/core/error.h"
#include "meshlm/parallel/local_comm.h"
#include "meshlm/parallel/mpi_comm.h"

namespace meshlm {

namespace {
bool has_env(const char* name) {
    const char* v = std::getenv(name);
    return v && *v;
}
int env_int(const char* name, int fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::atoi(v) : fallback;
}
}  // namespace

bool launched_by_mpi() {
    return has_env("OMPI_COMM_WORLD_SIZE") || has_env("PMIX_RANK") || has_env("PMI_RANK");
}

std::string mpi_library_version() {
    char text[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(text, &len) != MPI_SUCCESS) return "unknown";
    std::string v(text, static_cast<std::size_t>(len));
    if (const auto nl = v.find('\n'); nl != std::string::npos) v.resize(nl);
    while (!v.empty() && (v.back() == ',' || v.back() == ' ' || v.back() == '\0')) v.pop_back();
    return v;
}

MpiGuard::MpiGuard() {
    if (!launched_by_mpi()) return;
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
        int provided = 0;
        if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
            throw Error("MPI_Init_thread failed");
        MESHLM_CHECK(provided >= MPI_THREAD_FUNNELED, "MPI provides thread level ", provided,
                     ", meshlm needs MPI_THREAD_FUNNELED");
    }
    // Errors come back as codes that MpiComm throws, so the error policy (parallel/failure.h)
    // can print them once and abort every rank.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    active_ = true;
}

MpiGuard::~MpiGuard() {
    if (!active_) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

std::unique_ptr<Comm> make_world_comm(const MpiGuard& mpi) {
    // srun without a PMI plugin that MPI understands starts N unrelated singletons.
    const int step_tasks = env_int("SLURM_STEP_NUM_TASKS", 1);
    if (!mpi.active()) {
        if (step_tasks > 1 && has_env("SLURM_PROCID"))
            MESHLM_INVALID("srun started ", step_tasks,
                           " tasks but no MPI process-management interface was found: launch "
                           "with `srun --mpi=pmix` (see `srun --mpi=list`) or with mpirun");
        return std::make_unique<LocalComm>();
    }
    auto world = std::make_unique<MpiComm>(MPI_COMM_WORLD, false, comm_timeout_from_env());
    if (!has_env("OMPI_COMM_WORLD_SIZE") && has_env("SLURM_PROCID") && step_tasks != world->size())
        MESHLM_INVALID("srun started ", step_tasks, " tasks but MPI sees a world of ",
                       world->size(), ": use `srun --mpi=pmix` with an MPI built for it");
    return world;
}

}  // namespace meshlm

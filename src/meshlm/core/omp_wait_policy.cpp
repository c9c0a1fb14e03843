#include "meshlm/core/omp_wait_policy.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace meshlm {

namespace {
// Marks a process whose GOMP_SPINCOUNT meshlm set (for wait_policy_text), and stops a second
// re-execution should the variable be dropped on the way.
constexpr const char* kMarker = "MESHLM_DEFAULT_WAIT_POLICY";

bool under_valgrind() {
    const char* preload = std::getenv("LD_PRELOAD");
    return preload && std::strstr(preload, "vgpreload");
}
}  // namespace

void apply_default_wait_policy(char** argv) {
    if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT") || std::getenv(kMarker))
        return;
    if (under_valgrind()) return;
    const std::string spins = std::to_string(kDefaultSpinCount);
    if (setenv("GOMP_SPINCOUNT", spins.c_str(), 1) != 0 || setenv(kMarker, "1", 1) != 0) return;
    execv("/proc/self/exe", argv);
    // Only reached when the exec failed: run on with libgomp's default, as before.
    unsetenv("GOMP_SPINCOUNT");
}

std::string wait_policy_text() {
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    const char* spins = std::getenv("GOMP_SPINCOUNT");
    if (spins && std::getenv(kMarker) && !policy)
        return std::string("GOMP_SPINCOUNT=") + spins + " (meshlm's default)";
    std::string text;
    if (policy) text += std::string("OMP_WAIT_POLICY=") + policy;
    if (spins) text += std::string(text.empty() ? "" : ", ") + "GOMP_SPINCOUNT=" + spins;
    if (text.empty()) return "libgomp's default";
    return text + " (from the environment)";
}

}  // namespace meshlm

// Thread count shared by OpenMP kernels and OpenBLAS (its OpenMP build uses the same pool).
#include <omp.h>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"

extern "C" void openblas_set_num_threads(int);

namespace meshlm::kernels {

void set_threads(int n) {
    MESHLM_CHECK(n >= 1, "thread count must be >= 1, got ", n);
    omp_set_dynamic(0);
    omp_set_num_threads(n);
    openblas_set_num_threads(n);
}

int threads() {
    return omp_get_max_threads();
}

}  // namespace meshlm::kernels

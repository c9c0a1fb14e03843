// Thread count shared by our OpenMP kernels and oneDNN's GEMM (it uses the same OpenMP pool).
#include <omp.h>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {

void set_threads(int n) {
    MESHLM_CHECK(n >= 1, "thread count must be >= 1, got ", n);
    omp_set_dynamic(0);
    omp_set_num_threads(n);
}

int threads() {
    return omp_get_max_threads();
}

}  // namespace meshlm::kernels

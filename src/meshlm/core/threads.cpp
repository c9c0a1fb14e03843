#include "meshlm/core/threads.h"

#include <omp.h>

#include "meshlm/core/error.h"

namespace meshlm {

void set_thread_count(int n) {
    MESHLM_CHECK(n >= 1, "thread count must be >= 1, got ", n);
    omp_set_dynamic(0);
    omp_set_num_threads(n);
}

int thread_count() {
    return omp_get_max_threads();
}

}  // namespace meshlm

// The process's thread count for compute: one OpenMP pool, shared by our CPU kernels and
// oneDNN's GEMM (built on the same OpenMP runtime). Commands set it once from --threads.
#pragma once

namespace meshlm {

void set_thread_count(int n);  // n >= 1
int thread_count();

}  // namespace meshlm

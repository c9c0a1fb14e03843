// The CPU's capabilities and peaks (ops/machine.h), from the CPU backend.
#include "meshlm/kernels/ops/machine.h"

#include "meshlm/kernels/kernels.h"

namespace meshlm::ops {

bool native_bf16() {
    return kernels::native_bf16();
}

double measure_peak_gflops(int threads, double seconds) {
    return kernels::measure_peak_gflops(threads, seconds);
}

double measure_peak_bf16_gflops(int threads, double seconds) {
    return kernels::measure_peak_bf16_gflops(threads, seconds);
}

}  // namespace meshlm::ops

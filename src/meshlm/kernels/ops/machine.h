// What this machine's CPU does, for choosing a precision and reporting MFU: whether it has
// native bf16 dot products (AVX512-BF16; MESHLM_NO_NATIVE_BF16=1 says no), and its peak GFLOP/s
// measured by a short probe (the FMA for fp32, the bf16 dot product for bf16; 0 without it).
#pragma once

namespace meshlm::ops {

bool native_bf16();
double measure_peak_gflops(int threads, double seconds = 0.2);
double measure_peak_bf16_gflops(int threads, double seconds = 0.2);

}  // namespace meshlm::ops

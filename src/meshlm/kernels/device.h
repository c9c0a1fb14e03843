// Which devices this build and this machine have. A CPU-only build (the default) answers "no
// CUDA" without touching any CUDA library; the CUDA build (-DMESHLM_CUDA=ON) asks the runtime,
// and a machine without a GPU or driver counts 0 devices instead of failing.
#pragma once

#include <string>

#include "meshlm/core/tensor.h"

namespace meshlm::kernels {

const char* device_name(Device d);  // "cpu", "cuda"

// True in a build configured with -DMESHLM_CUDA=ON.
bool cuda_built();

// The CPU vector extensions the kernels use (compiled in, and avx512bf16 where found at run
// time), space-separated; and the linked oneDNN's version. For `meshlm --version`.
std::string cpu_features();
std::string cpu_gemm_library_version();

// CUDA devices this process can use: 0 in a CPU-only build, without a driver or without a GPU.
int cuda_device_count();
// Why cuda_device_count() is 0 ("" when it is not): the build, or the runtime's own words.
std::string cuda_unavailable_reason();

// Makes CUDA device `index` current for this thread (one process per GPU: rank % count).
// Throws like require_device() when there is none.
void set_cuda_device(int index);

// Throws meshlm::Error saying why `what` cannot run on `d`: a CPU-only build names the
// -DMESHLM_CUDA=ON flag, a CUDA build without a device says "no CUDA device". No-op for cpu.
void require_device(Device d, const char* what);

}  // namespace meshlm::kernels

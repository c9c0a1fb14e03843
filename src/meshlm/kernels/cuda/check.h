// Error checks at the CUDA boundary: a failed runtime or cuBLASLt call throws meshlm::Error with
// the call, its file:line and the library's own words (no exit() in the library). Included only
// by the CUDA backend's sources.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "meshlm/core/error.h"

namespace meshlm::kernels::cuda {

[[noreturn]] inline void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
    throw Error(detail::concat(file, ":", line, ": ", call, " failed: ", cudaGetErrorName(e), " (",
                               cudaGetErrorString(e), ")"));
}

[[noreturn]] inline void throw_cublas(cublasStatus_t s, const char* call, const char* file,
                                      int line) {
    throw Error(detail::concat(file, ":", line, ": ", call, " failed: cuBLAS status ",
                               static_cast<int>(s)));
}

}  // namespace meshlm::kernels::cuda

#define MESHLM_CUDA_CHECK(call)                                                        \
    do {                                                                               \
        const cudaError_t meshlm_e_ = (call);                                          \
        if (meshlm_e_ != cudaSuccess)                                                  \
            ::meshlm::kernels::cuda::throw_cuda(meshlm_e_, #call, __FILE__, __LINE__); \
    } while (0)

#define MESHLM_CUBLAS_CHECK(call)                                                        \
    do {                                                                                 \
        const cublasStatus_t meshlm_s_ = (call);                                         \
        if (meshlm_s_ != CUBLAS_STATUS_SUCCESS)                                          \
            ::meshlm::kernels::cuda::throw_cublas(meshlm_s_, #call, __FILE__, __LINE__); \
    } while (0)

// After a kernel launch: a bad configuration shows up here, a fault at the next synchronization.
#define MESHLM_CUDA_LAUNCHED() MESHLM_CUDA_CHECK(cudaGetLastError())

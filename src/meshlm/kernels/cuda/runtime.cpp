// The CUDA runtime side of kernels/device.h and DeviceBuffer: device discovery (a machine
// without driver or GPU counts 0 devices and keeps the runtime's reason), device memory, copies.
#include <cuda_runtime.h>

#include <string>

#include "meshlm/core/error.h"
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"

namespace meshlm::kernels::cuda {

namespace {

struct Discovery {
    int count = 0;
    std::string reason;
};

// Asked once: cudaGetDeviceCount is also what initializes the runtime.
const Discovery& discovery() {
    static const Discovery d = [] {
        Discovery r;
        int n = 0;
        const cudaError_t e = cudaGetDeviceCount(&n);
        if (e != cudaSuccess) {
            r.reason = detail::concat("no CUDA device (", cudaGetErrorName(e), ": ",
                                      cudaGetErrorString(e), ")");
            cudaGetLastError();  // clear the sticky error for later calls
            return r;
        }
        r.count = n;
        if (n == 0) r.reason = "no CUDA device (the driver reports none)";
        return r;
    }();
    return d;
}

}  // namespace

int device_count() {
    return discovery().count;
}

std::string unavailable_reason() {
    return discovery().reason;
}

void set_device(int index) {
    const int n = device_count();
    MESHLM_CHECK(index >= 0 && index < n, "CUDA device ", index, " does not exist (", n,
                 " devices)");
    MESHLM_CUDA_CHECK(cudaSetDevice(index));
}

void* malloc_zeroed(std::size_t bytes) {
    void* p = nullptr;
    MESHLM_CUDA_CHECK(cudaMalloc(&p, bytes));
    const cudaError_t e = cudaMemset(p, 0, bytes);
    if (e != cudaSuccess) {
        cudaFree(p);
        throw_cuda(e, "cudaMemset", __FILE__, __LINE__);
    }
    return p;
}

void free(void* p) noexcept {
    if (p) cudaFree(p);  // errors here would be from earlier work; a destructor cannot throw
}

void copy_bytes(void* dst, const void* src, std::size_t bytes) {
    MESHLM_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
}

void synchronize() {
    MESHLM_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace meshlm::kernels::cuda

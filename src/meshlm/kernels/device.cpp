// Device queries: the CUDA runtime's answers (cuda/runtime.cpp) in a CUDA build, fixed ones in
// a CPU-only build.
#include "meshlm/kernels/device.h"

#include "meshlm/core/error.h"
#include "meshlm/kernels/cpu/cpu_info.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"

namespace meshlm::kernels {

const char* device_name(Device d) {
    switch (d) {
        case Device::cpu:
            return "cpu";
        case Device::cuda:
            return "cuda";
    }
    return "?";
}

std::string cpu_features() {
    return cpu_features_in_use();
}

std::string cpu_gemm_library_version() {
    return "oneDNN " + onednn_version();
}

#ifdef MESHLM_HAVE_CUDA

bool cuda_built() {
    return true;
}

int cuda_device_count() {
    return cuda::device_count();
}

std::string cuda_unavailable_reason() {
    return cuda::device_count() > 0 ? std::string() : cuda::unavailable_reason();
}

void set_cuda_device(int index) {
    require_device(Device::cuda, "set_cuda_device");
    cuda::set_device(index);
}

#else

bool cuda_built() {
    return false;
}

int cuda_device_count() {
    return 0;
}

std::string cuda_unavailable_reason() {
    return "this meshlm was built without CUDA (configure with -DMESHLM_CUDA=ON)";
}

void set_cuda_device(int) {
    require_device(Device::cuda, "set_cuda_device");
}

#endif

void require_device(Device d, const char* what) {
    if (d == Device::cpu || cuda_device_count() > 0) return;
    throw Error(detail::concat(what, ": needs a CUDA device, but ", cuda_unavailable_reason()));
}

}  // namespace meshlm::kernels

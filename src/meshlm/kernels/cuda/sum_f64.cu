// The host side of sum_f64.cuh: scratch doubles and the last, one-block pass of a sum.
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/sum_f64.cuh"

namespace meshlm::kernels::cuda {

namespace {

// partials[0] = sum of partials[0, count): each thread strides in order, then one tree. Every
// read is done before the tree's barriers, so thread 0 may overwrite partials[0].
__global__ void sum_partials_kernel(double* partials, unsigned count) {
    double acc = 0;
    for (unsigned i = threadIdx.x; i < count; i += kSumThreads) acc += partials[i];
    acc = block_sum_f64(acc);
    if (threadIdx.x == 0) partials[0] = acc;
}

}  // namespace

DeviceDoubles::DeviceDoubles(std::size_t count) {
    MESHLM_CUDA_CHECK(
        cudaMallocAsync(reinterpret_cast<void**>(&p_), (count ? count : 1) * sizeof(double), 0));
}

DeviceDoubles::~DeviceDoubles() {
    cudaFreeAsync(p_, 0);  // an error here would be from earlier work; a destructor cannot throw
}

double sum_to_host(double* partials, unsigned count) {
    sum_partials_kernel<<<1, kSumThreads>>>(partials, count);
    MESHLM_CUDA_LAUNCHED();
    double total = 0;
    copy_to_host(&total, partials, 1);
    return total;
}

void copy_to_host(double* host, const double* device, std::size_t count) {
    MESHLM_CUDA_CHECK(cudaMemcpy(host, device, count * sizeof(double), cudaMemcpyDeviceToHost));
}

}  // namespace meshlm::kernels::cuda

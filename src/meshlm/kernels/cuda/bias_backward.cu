// A bias's gradient on the GPU, kernels.h's bias_backward: db[o] += sum_n dy[n, o]. Column sums
// without atomics, so every run gives the same bits: a block owns 32 columns, its kRowGroups row
// groups each sum rows n = group, group + kRowGroups, ... in order, then group 0 adds the group
// sums in group order (norm_columns.cuh's scheme, without the xhat product).
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kRowGroups = 16;

__global__ void bias_backward_kernel(float* db, const float* dy, int N, int O) {
    __shared__ float part[kRowGroups][33];  // 33: no bank conflicts between groups
    const int o = blockIdx.x * 32 + threadIdx.x, group = threadIdx.y;
    float s = 0.f;
    if (o < O)
        for (int n = group; n < N; n += kRowGroups) s += dy[static_cast<std::size_t>(n) * O + o];
    part[group][threadIdx.x] = s;
    __syncthreads();
    if (group != 0 || o >= O) return;
    float t = 0.f;
    for (int k = 0; k < kRowGroups; ++k) t += part[k][threadIdx.x];
    db[o] += t;
}

}  // namespace

void bias_backward(float* db, const float* dy, int N, int O) {
    if (N == 0 || O == 0) return;
    const dim3 block(32, kRowGroups), grid((O + 31) / 32);
    bias_backward_kernel<<<grid, block>>>(db, dy, N, O);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

// Rotary position embedding on the GPU, kernels.h's contract (cpu/rope.cpp): one thread per
// (row, head, pair). The angle is float(p) * inv_freq[i] in float, its cos and sin evaluated in
// double and rounded once, as on the CPU, so both backends turn by the same angles.
//   forward:  (x0, x1) <- (x0 cos a - x1 sin a,  x0 sin a + x1 cos a)
//   backward: the transpose (rotation by -a)
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 256;

template <bool kForward>
__global__ void rope_kernel(float* x, int ld, const int32_t* pos, int T, int heads, int D, int half,
                            bool interleaved, const float* inv_freq, std::size_t n) {
    for (std::size_t k = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; k < n;
         k += std::size_t{gridDim.x} * blockDim.x) {
        const int i = static_cast<int>(k % half);
        const int h = static_cast<int>(k / half % heads);
        const std::size_t row = k / half / heads;
        const int p = pos ? pos[row] : static_cast<int>(row % T);
        const float a = __fmul_rn(static_cast<float>(p), inv_freq[i]);  // no contraction
        double s = 0, c = 0;
        sincos(static_cast<double>(a), &s, &c);
        const float cs = static_cast<float>(c);
        const float sn = kForward ? static_cast<float>(s) : -static_cast<float>(s);
        float* r = x + row * ld + static_cast<std::size_t>(h) * D;
        float* a0 = r + (interleaved ? 2 * i : i);
        float* a1 = a0 + (interleaved ? 1 : half);
        const float x0 = *a0, x1 = *a1;
        *a0 = x0 * cs - x1 * sn;
        *a1 = x0 * sn + x1 * cs;
    }
}

template <bool kForward>
void rope(float* x, int ld, const int32_t* pos, int N, int T, int heads, int D, int rope_dim,
          bool interleaved, const float* inv_freq) {
    const int half = rope_dim / 2;
    const std::size_t n = static_cast<std::size_t>(N) * heads * half;
    if (n == 0) return;
    rope_kernel<kForward><<<grid_for(n, kThreads), kThreads>>>(x, ld, pos, T, heads, D, half,
                                                               interleaved, inv_freq, n);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace

void rope_forward(float* x, int ld, const int32_t* pos, int N, int T, int heads, int D,
                  int rope_dim, bool interleaved, const float* inv_freq) {
    rope<true>(x, ld, pos, N, T, heads, D, rope_dim, interleaved, inv_freq);
}

void rope_backward(float* dx, int ld, const int32_t* pos, int N, int T, int heads, int D,
                   int rope_dim, bool interleaved, const float* inv_freq) {
    rope<false>(dx, ld, pos, N, T, heads, D, rope_dim, interleaved, inv_freq);
}

}  // namespace meshlm::kernels::cuda

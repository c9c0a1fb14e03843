// Transformer-VQ's nearest-code search and codebook pieces on the GPU, kernels.h's contracts
// (cpu/vq_attention.cpp's vq_quantize, cpu/vq_codebook.cpp):
//   vq_quantize: a block per key, a thread per code: -2 k.c + |c|^2 (the CPU's GEMM form), the
//                lowest index on ties, then err = |k - c_z|^2 as the CPU sums it
//   vq_codebook, vq_commit_grad: element-wise, the CPU's expressions
//   vq_codebook_stats: a thread per key dimension walks the rows in order (deterministic; the
//                counts by thread 0), so the sums are the CPU's bits
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void quantize_kernel(std::int32_t* z, float* err, const float* k, int ldk,
                                const float* codebook, int S, int dk) {
    __shared__ float best_d[kThreads];
    __shared__ int best_s[kThreads];
    const std::size_t n = blockIdx.x;
    const float* kn = k + n * ldk;
    float bd = INFINITY;
    int bs = S;
    for (int s = threadIdx.x; s < S; s += blockDim.x) {
        const float* c = codebook + static_cast<std::size_t>(s) * dk;
        float dot = 0.f, cn = 0.f;
        for (int j = 0; j < dk; ++j) dot += kn[j] * c[j], cn += c[j] * c[j];
        const float dist = -2.f * dot + cn;
        if (dist < bd) bd = dist, bs = s;  // s rises per thread: the first of equals stays
    }
    best_d[threadIdx.x] = bd;
    best_s[threadIdx.x] = bs;
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h >>= 1) {
        if (static_cast<int>(threadIdx.x) < h) {
            const float od = best_d[threadIdx.x + h];
            const int os = best_s[threadIdx.x + h];
            if (od < best_d[threadIdx.x] || (od == best_d[threadIdx.x] && os < best_s[threadIdx.x]))
                best_d[threadIdx.x] = od, best_s[threadIdx.x] = os;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        const int s = best_s[0] < S ? best_s[0] : 0;  // all NaN distances: code 0, as the CPU
        const float* c = codebook + static_cast<std::size_t>(s) * dk;
        float e = 0.f;
        for (int j = 0; j < dk; ++j) e += (kn[j] - c[j]) * (kn[j] - c[j]);
        z[n] = s;
        err[n] = e;
    }
}

__global__ void codebook_kernel(float* codebook, const float* c_sum, const float* c_count, int dk,
                                std::size_t n) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x) {
        const float c = c_count[i / dk];
        codebook[i] = c_sum[i] * (1.f / (c < 0.01f ? 0.01f : c));
    }
}

__global__ void commit_kernel(float* dk, int ldd, const float* k, int ldk, const float* codebook,
                              const std::int32_t* z, int w, float scale, std::size_t n) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x) {
        const std::size_t r = i / w, j = i % w;
        dk[r * ldd + j] +=
            scale * (k[r * ldk + j] - codebook[static_cast<std::size_t>(z[r]) * w + j]);
    }
}

__global__ void codebook_stats_kernel(float* c_sum, float* c_count, const float* k, int ldk,
                                      const std::int32_t* z, int N, int dk) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < dk)
        for (int n = 0; n < N; ++n)
            c_sum[static_cast<std::size_t>(z[n]) * dk + j] +=
                k[static_cast<std::size_t>(n) * ldk + j];
    if (blockIdx.x == 0 && threadIdx.x == 0)
        for (int n = 0; n < N; ++n) c_count[z[n]] += 1.f;
}

}  // namespace

void vq_quantize(std::int32_t* z, float* err, const float* k, int ldk, const float* codebook, int N,
                 int S, int dk) {
    if (N == 0) return;
    quantize_kernel<<<N, kThreads>>>(z, err, k, ldk, codebook, S, dk);
    MESHLM_CUDA_LAUNCHED();
}

void vq_codebook(float* codebook, const float* c_sum, const float* c_count, int S, int dk) {
    const std::size_t n = static_cast<std::size_t>(S) * dk;
    if (n == 0) return;
    codebook_kernel<<<grid_for(n, kThreads), kThreads>>>(codebook, c_sum, c_count, dk, n);
    MESHLM_CUDA_LAUNCHED();
}

void vq_commit_grad(float* dk, int ldd, const float* k, int ldk, const float* codebook,
                    const std::int32_t* z, int N, int w, float scale) {
    const std::size_t n = static_cast<std::size_t>(N) * w;
    if (n == 0) return;
    commit_kernel<<<grid_for(n, kThreads), kThreads>>>(dk, ldd, k, ldk, codebook, z, w, scale, n);
    MESHLM_CUDA_LAUNCHED();
}

void vq_codebook_stats(float* c_sum, float* c_count, const float* k, int ldk, const std::int32_t* z,
                       int N, int S, int dk) {
    (void)S;
    if (N == 0) return;
    codebook_stats_kernel<<<(dk + kThreads - 1) / kThreads, kThreads>>>(c_sum, c_count, k, ldk, z,
                                                                        N, dk);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

// Token and position embeddings on the GPU, the contracts of kernels/vocab_parallel.h.
//   forward:  out[n, c] = wte[tokens[n] - v0, c] (0 outside [v0, v0 + Vl)); out[n] += wpe[n % T]
//   backward: dwte[tokens[n] - v0] += dout[n];  dwpe[n % T] += dout[n]
// The backward sums without atomics, so repeated tokens add up in token order on every run:
// thread (c, g) owns column c of the table rows v with v % kVocabGroups == g and walks the
// tokens in order; thread (t, c) of the position table walks n = t, t + T, ...
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kVocabGroups = 32;

__global__ void embed_forward(float* out, const int32_t* tokens, const float* wte, int v0, int Vl,
                              int C, std::size_t n) {
    for (std::size_t k = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; k < n;
         k += std::size_t{gridDim.x} * blockDim.x) {
        const std::size_t row = k / C;
        const int c = static_cast<int>(k % C), v = tokens[row] - v0;
        out[k] = v >= 0 && v < Vl ? wte[static_cast<std::size_t>(v) * C + c] : 0.f;
    }
}

// grid (ceil(C / kThreads), kVocabGroups)
__global__ void embed_backward(float* dwte, const float* dout, const int32_t* tokens, int v0,
                               int Vl, int N, int C) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x, group = blockIdx.y;
    if (c >= C) return;
    for (int n = 0; n < N; ++n) {
        const int v = tokens[n] - v0;
        if (v < 0 || v >= Vl || v % kVocabGroups != group) continue;
        dwte[static_cast<std::size_t>(v) * C + c] += dout[static_cast<std::size_t>(n) * C + c];
    }
}

__global__ void position_forward(float* out, const float* wpe, int T, int C, std::size_t n) {
    for (std::size_t k = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; k < n;
         k += std::size_t{gridDim.x} * blockDim.x) {
        const std::size_t row = k / C;
        out[k] += wpe[(row % T) * C + k % C];
    }
}

__global__ void position_backward(float* dwpe, const float* dout, int N, int T, int C) {
    const std::size_t k = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
    if (k >= static_cast<std::size_t>(T) * C) return;
    const int t = static_cast<int>(k / C), c = static_cast<int>(k % C);
    float acc = dwpe[k];
    for (int n = t; n < N; n += T) acc += dout[static_cast<std::size_t>(n) * C + c];
    dwpe[k] = acc;
}

}  // namespace

void embedding_forward_vocab_range(float* out, const int32_t* tokens, const float* wte, int v0,
                                   int Vl, int N, int C) {
    const std::size_t n = static_cast<std::size_t>(N) * C;
    if (n == 0) return;
    embed_forward<<<grid_for(n, kThreads), kThreads>>>(out, tokens, wte, v0, Vl, C, n);
    MESHLM_CUDA_LAUNCHED();
}

void embedding_backward_vocab_range(float* dwte, const float* dout, const int32_t* tokens, int v0,
                                    int Vl, int N, int C) {
    if (N == 0 || C == 0) return;
    const dim3 grid((C + kThreads - 1) / kThreads, kVocabGroups);
    embed_backward<<<grid, kThreads>>>(dwte, dout, tokens, v0, Vl, N, C);
    MESHLM_CUDA_LAUNCHED();
}

void position_embedding_forward(float* out, const float* wpe, int N, int T, int C) {
    const std::size_t n = static_cast<std::size_t>(N) * C;
    if (n == 0) return;
    position_forward<<<grid_for(n, kThreads), kThreads>>>(out, wpe, T, C, n);
    MESHLM_CUDA_LAUNCHED();
}

void position_embedding_backward(float* dwpe, const float* dout, int N, int T, int C) {
    const std::size_t n = static_cast<std::size_t>(T) * C;
    if (n == 0 || N == 0) return;
    position_backward<<<grid_for(n, kThreads, 1u << 30), kThreads>>>(dwpe, dout, N, T, C);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

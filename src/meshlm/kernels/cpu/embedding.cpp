// Token + position embedding.
//   forward:  out[n] = wte[tok[n]] + wpe[n % T]
//   backward: dwte[tok[n]] += dout[n], dwpe[n % T] += dout[n]
// The backward is parallel over channel slices, so each output element is summed by one thread
// in token order: deterministic without atomics or per-thread copies of the table.
#include "meshlm/kernels/kernels.h"

#include <omp.h>

namespace meshlm::kernels {

void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int N,
                       int T, int C) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) {
        const float* e = wte + static_cast<std::size_t>(tokens[n]) * C;
        const float* p = wpe + static_cast<std::size_t>(n % T) * C;
        float* o = out + static_cast<std::size_t>(n) * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) o[c] = e[c] + p[c];
    }
}

void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int N,
                        int T, int C) {
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        int c0 = static_cast<int>(static_cast<long>(C) * t / nt);
        int c1 = static_cast<int>(static_cast<long>(C) * (t + 1) / nt);
        for (int n = 0; n < N; ++n) {
            const float* g = dout + static_cast<std::size_t>(n) * C;
            float* e = dwte + static_cast<std::size_t>(tokens[n]) * C;
            float* p = dwpe + static_cast<std::size_t>(n % T) * C;
#pragma omp simd
            for (int c = c0; c < c1; ++c) {
                e[c] += g[c];
                p[c] += g[c];
            }
        }
    }
}

}  // namespace meshlm::kernels

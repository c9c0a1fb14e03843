// Transformer-VQ's codebook pieces (kernels.h's vq_codebook, vq_commit_grad, vq_codebook_stats):
// the codewords from their running sums, the commitment loss's gradient, and this batch's sums.
#include <algorithm>
#include <cstddef>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {

void vq_codebook(float* codebook, const float* c_sum, const float* c_count, int S, int dk) {
    for (int s = 0; s < S; ++s) {
        const float inv = 1.f / std::max(c_count[s], 0.01f);
        for (int j = 0; j < dk; ++j)
            codebook[static_cast<std::size_t>(s) * dk + j] =
                c_sum[static_cast<std::size_t>(s) * dk + j] * inv;
    }
}

void vq_commit_grad(float* dk, int ldd, const float* k, int ldk, const float* codebook,
                    const std::int32_t* z, int N, int w, float scale) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) {
        float* g = dk + static_cast<std::size_t>(n) * ldd;
        const float* kn = k + static_cast<std::size_t>(n) * ldk;
        const float* c = codebook + static_cast<std::size_t>(z[n]) * w;
        for (int j = 0; j < w; ++j) g[j] += scale * (kn[j] - c[j]);
    }
}

void vq_codebook_stats(float* c_sum, float* c_count, const float* k, int ldk, const std::int32_t* z,
                       int N, int S, int dk) {
    for (int n = 0; n < N; ++n) {
        const int s = z[n];
        MESHLM_CHECK(s >= 0 && s < S, "vq_codebook_stats: code ", s, " outside [0, ", S, ")");
        const float* kn = k + static_cast<std::size_t>(n) * ldk;
        float* row = c_sum + static_cast<std::size_t>(s) * dk;
        for (int j = 0; j < dk; ++j) row[j] += kn[j];
        c_count[s] += 1.f;
    }
}

}  // namespace meshlm::kernels

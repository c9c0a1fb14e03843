// T5's bias table resolved per distance and its gradient folded back (kernels.h's
// distance_bias_expand / _fold): the loops model/t5_bias.cpp ran, in the same order.
#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {

namespace {

void check_buckets(const std::int32_t* buckets, int L, int NB) {
    for (int d = 0; d < L; ++d)
        MESHLM_CHECK(buckets[d] >= 0 && buckets[d] < NB, "distance ", d, " in bucket ", buckets[d],
                     " outside 0..", NB - 1);
}

}  // namespace

void distance_bias_expand(float* dist, const float* table, const std::int32_t* buckets, int H,
                          int L, int NB) {
    check_buckets(buckets, L, NB);
    for (int h = 0; h < H; ++h) {
        const float* row = table + static_cast<std::size_t>(h) * NB;
        float* out = dist + static_cast<std::size_t>(h) * L;
        for (int d = 0; d < L; ++d) out[d] = row[buckets[d]];
    }
}

void distance_bias_fold(float* grad_table, const float* grad, const std::int32_t* buckets, int H,
                        int L, int NB) {
    check_buckets(buckets, L, NB);
    for (int h = 0; h < H; ++h) {
        float* row = grad_table + static_cast<std::size_t>(h) * NB;
        const float* g = grad + static_cast<std::size_t>(h) * L;
        for (int d = 0; d < L; ++d) row[buckets[d]] += g[d];
    }
}

}  // namespace meshlm::kernels

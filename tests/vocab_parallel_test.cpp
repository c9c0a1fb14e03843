// The vocabulary-parallel kernels (kernels/vocab_parallel.h) in one process: the vocabulary cut
// into M ranges, the all-reduces done by hand, against the whole-vocabulary kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "meshlm/core/rng.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/vocab_parallel.h"

namespace meshlm {
namespace {

namespace k = kernels;

TEST(VocabParallel, CrossEntropyMatchesWholeVocabulary) {
    const int N = 9, V = 44;
    Philox rng(5, 0);
    std::vector<float> logits(N * V);
    for (float& x : logits) x = 3.f * rng.normal();
    std::vector<std::int32_t> targets(N);
    for (int n = 0; n < N; ++n) targets[n] = n == 4 ? -1 : static_cast<std::int32_t>(rng.below(V));
    const float scale = 0.25f;
    std::vector<float> ref = logits, ref_losses(N);
    k::softmax_cross_entropy(ref.data(), ref_losses.data(), targets.data(), N, V, V, scale);

    for (int M : {1, 2, 4}) {
        const int Vl = V / M, ldv = Vl + 3;
        // Each "rank" holds its own (N, Vl) logits in rows of stride ldv; ce_finish zeroes the
        // padding columns of the gradient.
        std::vector<std::vector<float>> x(M, std::vector<float>(std::size_t(N) * ldv, 99.f));
        for (int r = 0; r < M; ++r)
            for (int n = 0; n < N; ++n)
                for (int v = 0; v < Vl; ++v) x[r][n * ldv + v] = logits[n * V + r * Vl + v];
        std::vector<float> row_max(N, -INFINITY), stats(2 * N, 0.f), part(2 * N);
        std::vector<float> local_max(N), losses(N);
        for (int r = 0; r < M; ++r) {
            k::ce_row_max(local_max.data(), x[r].data(), targets.data(), N, Vl, ldv);
            for (int n = 0; n < N; ++n) row_max[n] = std::max(row_max[n], local_max[n]);
        }
        for (int r = 0; r < M; ++r) {
            k::ce_row_sums(part.data(), x[r].data(), targets.data(), row_max.data(), r * Vl, N, Vl,
                           ldv, true);
            for (int i = 0; i < 2 * N; ++i) stats[i] += part[i];
        }
        for (int r = 0; r < M; ++r)
            k::ce_finish(x[r].data(), losses.data(), targets.data(), row_max.data(), stats.data(),
                         r * Vl, N, Vl, ldv, scale);
        for (int n = 0; n < N; ++n) EXPECT_NEAR(losses[n], ref_losses[n], 1e-5f) << "M=" << M;
        for (int r = 0; r < M; ++r)
            for (int n = 0; n < N; ++n) {
                for (int v = 0; v < Vl; ++v)
                    ASSERT_NEAR(x[r][n * ldv + v], ref[n * V + r * Vl + v], 1e-6f)
                        << "M=" << M << " rank " << r << " row " << n << " column " << v;
                for (int v = Vl; v < ldv; ++v)
                    ASSERT_EQ(x[r][n * ldv + v], 0.f) << "M=" << M << " padding of row " << n;
            }
    }
}

TEST(VocabParallel, EmbeddingRangesAddUpToTheWholeTable) {
    const int N = 12, T = 4, C = 16, V = 20, M = 4, Vl = V / M;
    Philox rng(6, 0);
    std::vector<float> wte(V * C), wpe(T * C), dout(N * C);
    for (float& x : wte) x = rng.normal();
    for (float& x : wpe) x = rng.normal();
    for (float& x : dout) x = rng.normal();
    std::vector<std::int32_t> tokens(N);
    for (auto& t : tokens) t = static_cast<std::int32_t>(rng.below(V));

    // The whole table's lookup and scatter, row by row in order.
    std::vector<float> ref(N * C), dwte_ref(V * C, 0.f), dwpe_ref(T * C, 0.f);
    for (int n = 0; n < N; ++n)
        for (int c = 0; c < C; ++c) {
            ref[n * C + c] = wte[tokens[n] * C + c] + wpe[(n % T) * C + c];
            dwte_ref[tokens[n] * C + c] += dout[n * C + c];
            dwpe_ref[(n % T) * C + c] += dout[n * C + c];
        }

    std::vector<float> out(N * C, 0.f), part(N * C), dwte(V * C), dwpe(T * C);
    for (int r = 0; r < M; ++r) {
        k::embedding_forward_vocab_range(part.data(), tokens.data(), wte.data() + r * Vl * C,
                                         r * Vl, Vl, N, C);
        for (int i = 0; i < N * C; ++i) out[i] += part[i];
        k::embedding_backward_vocab_range(dwte.data() + r * Vl * C, dout.data(), tokens.data(),
                                          r * Vl, Vl, N, C);
    }
    k::position_embedding_forward(out.data(), wpe.data(), N, T, C);
    k::position_embedding_backward(dwpe.data(), dout.data(), N, T, C);
    EXPECT_EQ(out, ref);  // one rank contributes each row, the others exact zeros
    EXPECT_EQ(dwte, dwte_ref);
    EXPECT_EQ(dwpe, dwpe_ref);
}

}  // namespace
}  // namespace meshlm

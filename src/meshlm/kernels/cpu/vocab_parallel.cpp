// The embedding (the model's only one: one vocabulary range covers the whole table on one
// rank) and vocabulary-parallel cross-entropy (see kernels/vocab_parallel.h). The embedding is
// the token lookup of one rank's range plus the position rows; the cross-entropy is
// cross_entropy.cpp's math with the log-sum-exp split into a max phase and a sum phase, so
// ranks can combine partial results.
#include "meshlm/kernels/vocab_parallel.h"

#include <omp.h>

#include <cmath>
#include <cstddef>

#include "meshlm/kernels/cpu/vec_math.h"

namespace meshlm::kernels {

void embedding_forward_vocab_range(float* out, const int32_t* tokens, const float* wte, int v0,
                                   int Vl, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) {
        const int v = tokens[n] - v0;
        float* o = out + static_cast<std::size_t>(n) * C;
        const float* e = wte + static_cast<std::size_t>(v) * C;
        const bool local = v >= 0 && v < Vl;
#pragma omp simd
        for (int c = 0; c < C; ++c) o[c] = local ? e[c] : 0.f;
    }
}

void embedding_backward_vocab_range(float* dwte, const float* dout, const int32_t* tokens, int v0,
                                    int Vl, int N, int C) {
    // Parallel over channel slices: each element is summed by one thread in token order.
#pragma omp parallel
    {
        const int nt = omp_get_num_threads(), t = omp_get_thread_num();
        const int c0 = static_cast<int>(static_cast<long>(C) * t / nt);
        const int c1 = static_cast<int>(static_cast<long>(C) * (t + 1) / nt);
        for (int n = 0; n < N; ++n) {
            const int v = tokens[n] - v0;
            if (v < 0 || v >= Vl) continue;
            const float* g = dout + static_cast<std::size_t>(n) * C;
            float* e = dwte + static_cast<std::size_t>(v) * C;
#pragma omp simd
            for (int c = c0; c < c1; ++c) e[c] += g[c];
        }
    }
}

void position_embedding_forward(float* out, const float* wpe, int N, int T, int C) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) {
        float* o = out + static_cast<std::size_t>(n) * C;
        const float* p = wpe + static_cast<std::size_t>(n % T) * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) o[c] += p[c];
    }
}

void position_embedding_backward(float* dwpe, const float* dout, int N, int T, int C) {
#pragma omp parallel
    {
        const int nt = omp_get_num_threads(), t = omp_get_thread_num();
        const int c0 = static_cast<int>(static_cast<long>(C) * t / nt);
        const int c1 = static_cast<int>(static_cast<long>(C) * (t + 1) / nt);
        for (int n = 0; n < N; ++n) {
            const float* g = dout + static_cast<std::size_t>(n) * C;
            float* p = dwpe + static_cast<std::size_t>(n % T) * C;
#pragma omp simd
            for (int c = c0; c < c1; ++c) p[c] += g[c];
        }
    }
}

void ce_row_max(float* row_max, const float* logits, const int32_t* targets, int N, int Vl,
                int ldv) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) {
        if (targets[n] < 0) {
            row_max[n] = 0.f;
            continue;
        }
        row_max[n] = cpu::max_of(logits + static_cast<std::size_t>(n) * ldv, Vl);
    }
}

void ce_row_sums(float* stats, float* logits, const int32_t* targets, const float* row_max, int v0,
                 int N, int Vl, int ldv, bool store) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) {
        stats[2 * n] = stats[2 * n + 1] = 0.f;
        if (targets[n] < 0) continue;
        float* x = logits + static_cast<std::size_t>(n) * ldv;
        const int t = targets[n] - v0;
        if (t >= 0 && t < Vl) stats[2 * n + 1] = x[t];  // before the exps overwrite it
        stats[2 * n] = cpu::sum_exp(x, Vl, row_max[n], store ? x : nullptr);
    }
}

void ce_finish(float* logits, float* losses, const int32_t* targets, const float* row_max,
               const float* stats, int v0, int N, int Vl, int ldv, float dlogits_scale,
               float z_loss) {
    const bool grad = dlogits_scale != 0.f;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) {
        float* x = logits + static_cast<std::size_t>(n) * ldv;
        // Padding columns (ldv > Vl) become 0, so a GEMM over the whole row stride reads no stale
        // logits.
        if (grad)
            for (int v = Vl; v < ldv; ++v) x[v] = 0.f;
        if (targets[n] < 0) {
            losses[n] = 0.f;
            if (grad)
                for (int v = 0; v < Vl; ++v) x[v] = 0.f;
            continue;
        }
        const float sum = stats[2 * n];
        const float lse = std::log(sum) + row_max[n];
        losses[n] = lse - stats[2 * n + 1];
        if (!grad) continue;
        // softmax_cross_entropy's gradient with its z-loss; z_loss = 0 gives dlogits_scale / sum.
        const float k = dlogits_scale * (1.f + 2.f * z_loss * lse) / sum;
#pragma omp simd
        for (int v = 0; v < Vl; ++v) x[v] *= k;
        const int t = targets[n] - v0;
        if (t >= 0 && t < Vl) x[t] -= dlogits_scale;
    }
}

}  // namespace meshlm::kernels

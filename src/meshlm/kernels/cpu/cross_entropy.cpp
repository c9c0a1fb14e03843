// Fused softmax + cross-entropy with an optional z-loss, one row of logits at a time:
//   lse  = logsumexp(x),  loss = lse - x[t]
//   dx   = d/dx scale * (loss + z lse^2) = scale * ((1 + 2 z lse) softmax(x) - onehot(t)),
//          written over x in place
// The z-loss (PaLM) pulls lse towards 0; it shapes the gradient only, `losses` stay plain
// cross-entropy.
// The exp of each logit is computed once and stored where the logit was, so the [N, V]
// logits buffer doubles as the gradient buffer.
#include <cmath>

#include "meshlm/kernels/cpu/vec_math.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {

void softmax_cross_entropy(float* logits, float* losses, const int32_t* targets, int N, int V,
                           int ldv, float dlogits_scale, float z_loss) {
    const bool grad = dlogits_scale != 0.f;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) {
        float* x = logits + static_cast<std::size_t>(n) * ldv;
        const int t = targets[n];
        if (t < 0) {
            losses[n] = 0.f;
            if (grad)
                for (int v = 0; v < V; ++v) x[v] = 0.f;
            continue;
        }
        const float mx = cpu::max_of(x, V);
        const float xt = x[t];
        const float sum = cpu::sum_exp(x, V, mx, grad ? x : nullptr);
        const float lse = std::log(sum) + mx;
        losses[n] = lse - xt;
        if (grad) {
            // With z_loss = 0 this is exactly dlogits_scale / sum.
            const float kf = dlogits_scale * (1.f + 2.f * z_loss * lse) / sum;
            const __m256 k = _mm256_set1_ps(kf);
            int v = 0;
            for (; v + 8 <= V; v += 8)
                _mm256_storeu_ps(x + v, _mm256_mul_ps(_mm256_loadu_ps(x + v), k));
            for (; v < V; ++v) x[v] *= kf;
            x[t] -= dlogits_scale;
        }
    }
}

}  // namespace meshlm::kernels

// AdamW with decoupled weight decay, matching torch.optim.AdamW:
//   p -= lr * wd * p
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
#include <cmath>

#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {

void adamw(float* p, const float* g, float* m, float* v, std::size_t n, float lr, float beta1,
           float beta2, float eps, float weight_decay, long step, float grad_scale) {
    const float bc1 = 1.f - static_cast<float>(std::pow(beta1, static_cast<double>(step)));
    const float bc2_sqrt =
        static_cast<float>(std::sqrt(1.0 - std::pow(beta2, static_cast<double>(step))));
    const float step_size = lr / bc1;
    const float decay = 1.f - lr * weight_decay;
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) {
        const float gi = g[i] * grad_scale;
        float mi = beta1 * m[i] + (1.f - beta1) * gi;
        float vi = beta2 * v[i] + (1.f - beta2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] = p[i] * decay - step_size * mi / (std::sqrt(vi) / bc2_sqrt + eps);
    }
}

}  // namespace meshlm::kernels

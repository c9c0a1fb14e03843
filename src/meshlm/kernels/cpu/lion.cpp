// Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"), as optax.lion and the
// paper's pseudocode, with decoupled weight decay:
//   u = sign(b1 m + (1 - b1) g)      (sign(0) = 0)
//   m = b2 m + (1 - b2) g
//   p = p * (1 - lr wd) - lr u
#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {

void lion(float* p, const float* g, float* m, std::size_t n, float lr, float beta1, float beta2,
          float weight_decay, float grad_scale) {
    const float decay = 1.f - lr * weight_decay;
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) {
        const float gi = g[i] * grad_scale, mi = m[i];
        const float c = beta1 * mi + (1.f - beta1) * gi;
        const float u = static_cast<float>((c > 0.f) - (c < 0.f));
        m[i] = beta2 * mi + (1.f - beta2) * gi;
        p[i] = p[i] * decay - lr * u;
    }
}

}  // namespace meshlm::kernels

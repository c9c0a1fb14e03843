#include "meshlm/model/norm.h"

#include "meshlm/kernels/ops/layernorm.h"
#include "meshlm/kernels/ops/rmsnorm.h"

namespace meshlm {

void Norm::forward(float* y, float* mean, float* rstd, const float* x, const float* w,
                   const float* b, int N) const {
    const Tensor yv = view(y, {N, C}, device), xv = view(x, {N, C}, device);
    const Tensor rv = view(rstd, {N}, device), wv = view(w, {C}, device), bv = view(b, {C}, device);
    if (rms) return ops::rmsnorm_forward(yv, rv, xv, wv, bv, eps);
    ops::layernorm_forward(yv, view(mean, {N}, device), rv, xv, wv, bv, eps);
}

void Norm::backward(float* dx, float* dw, float* db, const float* dy, const float* x,
                    const float* w, const float* mean, const float* rstd, int N) const {
    const Tensor dxv = view(dx, {N, C}, device), dyv = view(dy, {N, C}, device);
    const Tensor xv = view(x, {N, C}, device), wv = view(w, {C}, device);
    const Tensor dwv = view(dw, {C}, device), dbv = view(db, {C}, device);
    const Tensor rv = view(rstd, {N}, device);
    if (rms) return ops::rmsnorm_backward(dxv, dwv, dbv, dyv, xv, wv, rv);
    ops::layernorm_backward(dxv, dwv, dbv, dyv, xv, wv, view(mean, {N}, device), rv);
}

}  // namespace meshlm

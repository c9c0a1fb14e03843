#include "meshlm/model/norm.h"

#include "meshlm/kernels/kernels.h"

namespace meshlm {

void Norm::forward(float* y, float* mean, float* rstd, const float* x, const float* w,
                   const float* b, int N) const {
    if (rms)
        kernels::rmsnorm_forward(y, rstd, x, w, b, N, C, eps);
    else
        kernels::layernorm_forward(y, mean, rstd, x, w, b, N, C, eps);
}

void Norm::backward(float* dx, float* dw, float* db, const float* dy, const float* x,
                    const float* w, const float* mean, const float* rstd, int N) const {
    if (rms)
        kernels::rmsnorm_backward(dx, dw, db, dy, x, w, rstd, N, C);
    else
        kernels::layernorm_backward(dx, dw, db, dy, x, w, mean, rstd, N, C);
}

}  // namespace meshlm

// The normalization layer: LayerNorm or RMSNorm over the last dim, gain w and optional bias b.
//   layernorm  y = (x - mean) * rstd * w + b,  rstd = 1 / sqrt(var + eps)
//   rmsnorm    y = x * rstd * w (+ b),          rstd = 1 / sqrt(mean(x^2) + eps)
// Backward (dx accumulates: the residual stream's gradient arrives there too):
//   layernorm  dx += rstd * (dxh - mean(dxh) - xh * mean(dxh * xh)),  dxh = dy * w, xh the
//              normalized x;  dw += sum_n dy * xh;  db += sum_n dy
//   rmsnorm    dx += rstd * (dxh - xh * mean(dxh * xh));  dw, db likewise
#pragma once

#include "meshlm/core/tensor.h"
#include "meshlm/model/model_config.h"

namespace meshlm {

struct Norm {
    bool rms = false;
    float eps = 1e-5f;
    int C = 0;
    Device device = Device::cpu;  // where its views live (the ops dispatch on it)

    explicit Norm(const ModelConfig& cfg)
        : rms(cfg.norm == "rmsnorm"), eps(cfg.norm_eps), C(cfg.d_model) {}
    // mean is unused by RMSNorm (may be null there).
    void forward(float* y, float* mean, float* rstd, const float* x, const float* w, const float* b,
                 int N) const;
    void backward(float* dx, float* dw, float* db, const float* dy, const float* x, const float* w,
                  const float* mean, const float* rstd, int N) const;
};

}  // namespace meshlm

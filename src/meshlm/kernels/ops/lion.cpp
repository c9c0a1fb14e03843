// lion's checks and device dispatch (ops/lion.h).
#include "meshlm/kernels/ops/lion.h"

#include <cstddef>

#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

void lion(const Tensor& p, const Tensor& g, const Tensor& m, const LionStep& s) {
    constexpr const char* op = "lion";
    const Device d = common_device(op, {{"p", p}, {"g", g}, {"m", m}});
    expect_f32(op, {{"p", p}, {"g", g}, {"m", m}});
    expect_shape(op, {"g", g}, p.shape);
    expect_shape(op, {"m", m}, p.shape);
    kernels::require_device(d, op);
    const auto n = static_cast<std::size_t>(p.numel());
    if (d == Device::cpu)
        return kernels::lion(p.f32(), g.f32(), m.f32(), n, s.lr, s.beta1, s.beta2, s.weight_decay,
                             s.grad_scale);
    MESHLM_ON_CUDA(op, kernels::cuda::lion(p.f32(), g.f32(), m.f32(), n, s.lr, s.beta1, s.beta2,
                                           s.weight_decay, s.grad_scale));
}

}  // namespace meshlm::ops

// adamw's checks and device dispatch (ops/adamw.h).
#include "meshlm/kernels/ops/adamw.h"

#include <cstddef>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

void adamw(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v, const AdamWStep& s) {
    constexpr const char* op = "adamw";
    const Device d = common_device(op, {{"p", p}, {"g", g}, {"m", m}, {"v", v}});
    expect_f32(op, {{"p", p}, {"g", g}, {"m", m}, {"v", v}});
    expect_shape(op, {"g", g}, p.shape);
    expect_shape(op, {"m", m}, p.shape);
    expect_shape(op, {"v", v}, p.shape);
    if (s.step < 1) throw Error(detail::concat(op, ": step ", s.step, " (steps count from 1)"));
    kernels::require_device(d, op);
    const auto n = static_cast<std::size_t>(p.numel());
    if (d == Device::cpu)
        return kernels::adamw(p.f32(), g.f32(), m.f32(), v.f32(), n, s.lr, s.beta1, s.beta2, s.eps,
                              s.weight_decay, s.step, s.grad_scale);
    MESHLM_ON_CUDA(op, kernels::cuda::adamw(p.f32(), g.f32(), m.f32(), v.f32(), n, s.lr, s.beta1,
                                            s.beta2, s.eps, s.weight_decay, s.step, s.grad_scale));
}

}  // namespace meshlm::ops

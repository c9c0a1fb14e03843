// residual_forward's checks and device dispatch (ops/residual.h).
#include "meshlm/kernels/ops/residual.h"

#include <cstddef>

#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

void residual_forward(const Tensor& out, const Tensor& a, const Tensor& b) {
    constexpr const char* op = "residual_forward";
    const Device d = common_device(op, {{"out", out}, {"a", a}, {"b", b}});
    expect_f32(op, {{"out", out}, {"a", a}, {"b", b}});
    expect_shape(op, {"a", a}, out.shape);
    expect_shape(op, {"b", b}, out.shape);
    kernels::require_device(d, op);
    const auto n = static_cast<std::size_t>(out.numel());
    if (d == Device::cpu) return kernels::residual_forward(out.f32(), a.f32(), b.f32(), n);
    MESHLM_ON_CUDA(op, kernels::cuda::residual_forward(out.f32(), a.f32(), b.f32(), n));
}

}  // namespace meshlm::ops

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

void bias_residual(const Tensor& out, const Tensor& b1, const Tensor& b2, const Tensor& r) {
    constexpr const char* op = "bias_residual";
    const Device d = common_device(op, {{"out", out}, {"r", r}}, {{"b1", b1}, {"b2", b2}});
    expect_f32(op, {{"out", out}, {"r", r}, {"b1", b1}, {"b2", b2}});
    const auto [N, C] = expect_rows(op, {"out", out});
    expect_shape(op, {"r", r}, out.shape);
    if (present(b1)) expect_shape(op, {"b1", b1}, Shape{C});
    if (present(b2)) expect_shape(op, {"b2", b2}, Shape{C});
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::bias_residual(out.f32(), b1.f32(), b2.f32(), r.f32(), N, C);
    MESHLM_ON_CUDA(op, kernels::cuda::bias_residual(out.f32(), b1.f32(), b2.f32(), r.f32(), N, C));
}

}  // namespace meshlm::ops

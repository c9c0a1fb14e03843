// The element-wise ops' checks and device dispatch (ops/elementwise.h).
#include "meshlm/kernels/ops/elementwise.h"

#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

void fill(const Tensor& x, float value) {
    constexpr const char* op = "fill";
    const Device d = common_device(op, {{"x", x}});
    expect_f32(op, {{"x", x}});
    kernels::require_device(d, op);
    const auto n = static_cast<std::size_t>(x.numel());
    if (d == Device::cpu) return kernels::fill(x.f32(), value, n);
    MESHLM_ON_CUDA(op, kernels::cuda::fill(x.f32(), value, n));
}

void mul(const Tensor& out, const Tensor& a, const Tensor& b) {
    constexpr const char* op = "mul";
    const Device d = common_device(op, {{"out", out}, {"a", a}, {"b", b}}, {}, Strides::allowed);
    expect_f32(op, {{"out", out}, {"a", a}, {"b", b}});
    const auto [N, C] = expect_rows(op, {"out", out});
    expect_shape(op, {"a", a}, out.shape);
    expect_shape(op, {"b", b}, out.shape);
    const int lo = as_int(op, "out's row stride", row_stride(op, {"out", out}));
    const int la = as_int(op, "a's row stride", row_stride(op, {"a", a}));
    const int lb = as_int(op, "b's row stride", row_stride(op, {"b", b}));
    kernels::require_device(d, op);
    if (d == Device::cpu) return kernels::mul_rows(out.f32(), lo, a.f32(), la, b.f32(), lb, N, C);
    MESHLM_ON_CUDA(op, kernels::cuda::mul_rows(out.f32(), lo, a.f32(), la, b.f32(), lb, N, C));
}

void axpy(const Tensor& y, const Tensor& x, float alpha) {
    constexpr const char* op = "axpy";
    const Device d = common_device(op, {{"y", y}, {"x", x}});
    expect_f32(op, {{"y", y}, {"x", x}});
    expect_shape(op, {"x", x}, y.shape);
    kernels::require_device(d, op);
    const auto n = static_cast<std::size_t>(y.numel());
    if (d == Device::cpu) return kernels::axpy(y.f32(), x.f32(), alpha, n);
    MESHLM_ON_CUDA(op, kernels::cuda::axpy(y.f32(), x.f32(), alpha, n));
}

}  // namespace meshlm::ops

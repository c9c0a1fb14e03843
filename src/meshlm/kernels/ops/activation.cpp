// The activations' checks and device dispatch (ops/activation.h).
#include "meshlm/kernels/ops/activation.h"

#include <cstddef>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"

#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

void activation_forward(Act act, const Tensor& out, const Tensor& x) {
    constexpr const char* op = "activation_forward";
    const Device d = common_device(op, {{"x", x}, {"out", out}});
    expect_f32(op, {{"x", x}, {"out", out}});
    expect_shape(op, {"out", out}, x.shape);
    kernels::require_device(d, op);
    const auto n = static_cast<std::size_t>(x.numel());
    if (d == Device::cpu) return kernels::activation_forward(act, out.f32(), x.f32(), n);
    MESHLM_ON_CUDA(op, kernels::cuda::activation_forward(act, out.f32(), x.f32(), n));
}

void activation_backward(Act act, const Tensor& dx, const Tensor& x, const Tensor& dout) {
    constexpr const char* op = "activation_backward";
    const Device d = common_device(op, {{"x", x}, {"dx", dx}, {"dout", dout}});
    expect_f32(op, {{"x", x}, {"dx", dx}, {"dout", dout}});
    expect_shape(op, {"dx", dx}, x.shape);
    expect_shape(op, {"dout", dout}, x.shape);
    kernels::require_device(d, op);
    const auto n = static_cast<std::size_t>(x.numel());
    if (d == Device::cpu)
        return kernels::activation_backward(act, dx.f32(), x.f32(), dout.f32(), n);
    MESHLM_ON_CUDA(op, kernels::cuda::activation_backward(act, dx.f32(), x.f32(), dout.f32(), n));
}

namespace {
// h [N, 2F]: returns {N, F}.
Rows expect_glu_input(const char* op, const Arg& h) {
    const auto [N, C2] = expect_rows(op, h);
    if (C2 % 2 != 0)
        throw Error(detail::concat(op, ": ", h.name, " has shape ", h.t.shape.str(),
                                   ", expected [N, 2F] (gate | up)"));
    return {N, C2 / 2};
}
}  // namespace

void glu_forward(Act act, const Tensor& out, const Tensor& h) {
    constexpr const char* op = "glu_forward";
    const Device d = common_device(op, {{"h", h}, {"out", out}});
    expect_f32(op, {{"h", h}, {"out", out}});
    const auto [N, F] = expect_glu_input(op, {"h", h});
    expect_shape(op, {"out", out}, Shape{N, F});
    kernels::require_device(d, op);
    if (d == Device::cpu) return kernels::glu_forward(act, out.f32(), h.f32(), N, F);
    MESHLM_ON_CUDA(op, kernels::cuda::glu_forward(act, out.f32(), h.f32(), N, F));
}

void glu_backward(Act act, const Tensor& dh, const Tensor& h, const Tensor& dout) {
    constexpr const char* op = "glu_backward";
    const Device d = common_device(op, {{"h", h}, {"dh", dh}, {"dout", dout}});
    expect_f32(op, {{"h", h}, {"dh", dh}, {"dout", dout}});
    const auto [N, F] = expect_glu_input(op, {"h", h});
    expect_shape(op, {"dh", dh}, h.shape);
    expect_shape(op, {"dout", dout}, Shape{N, F});
    kernels::require_device(d, op);
    if (d == Device::cpu) return kernels::glu_backward(act, dh.f32(), h.f32(), dout.f32(), N, F);
    MESHLM_ON_CUDA(op, kernels::cuda::glu_backward(act, dh.f32(), h.f32(), dout.f32(), N, F));
}

}  // namespace meshlm::ops

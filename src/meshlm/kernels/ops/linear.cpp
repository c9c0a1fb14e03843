// The linear ops' checks and device dispatch (ops/linear.h).
#include "meshlm/kernels/ops/linear.h"

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

namespace {

struct LinearDims {
    int N, I, O;
};

// x [N, I] and W [O, I]; returns {N, I, O}.
LinearDims expect_linear(const char* op, const Arg& x, const Arg& W) {
    const auto [N, I] = expect_rows(op, x);
    const auto [O, Iw] = expect_rows(op, W);
    if (Iw != I)
        throw Error(detail::concat(op, ": ", W.name, " has shape ", W.t.shape.str(),
                                   ", expected [O, ", I, "] (", x.name, " has ", I, " columns)"));
    return {N, I, O};
}

}  // namespace

void linear_forward(const Tensor& y, const Tensor& x, const Tensor& W, const Tensor& b) {
    constexpr const char* op = "linear_forward";
    const Device d = common_device(op, {{"y", y}, {"x", x}, {"W", W}}, {{"b", b}});
    expect_f32(op, {{"y", y}, {"x", x}, {"W", W}, {"b", b}});
    const auto [N, I, O] = expect_linear(op, {"x", x}, {"W", W});
    expect_shape(op, {"y", y}, Shape{N, O});
    if (present(b)) expect_shape(op, {"b", b}, Shape{O});
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::linear_forward(y.f32(), x.f32(), W.f32(), b.f32(), N, I, O);
    MESHLM_ON_CUDA(op, kernels::cuda::linear_forward(y.f32(), x.f32(), W.f32(), b.f32(), N, I, O));
}

void linear_backward(const Tensor& dx, const Tensor& dW, const Tensor& db, const Tensor& dy,
                     const Tensor& x, const Tensor& W) {
    constexpr const char* op = "linear_backward";
    const Device d =
        common_device(op, {{"dW", dW}, {"dy", dy}, {"x", x}, {"W", W}}, {{"dx", dx}, {"db", db}});
    expect_f32(op, {{"dx", dx}, {"dW", dW}, {"db", db}, {"dy", dy}, {"x", x}, {"W", W}});
    const auto [N, I, O] = expect_linear(op, {"x", x}, {"W", W});
    expect_shape(op, {"dy", dy}, Shape{N, O});
    expect_shape(op, {"dW", dW}, W.shape);
    if (present(dx)) expect_shape(op, {"dx", dx}, x.shape);
    if (present(db)) expect_shape(op, {"db", db}, Shape{O});
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::linear_backward(dx.f32(), dW.f32(), db.f32(), dy.f32(), x.f32(), W.f32(), N,
                                        I, O);
    MESHLM_ON_CUDA(op, kernels::cuda::linear_backward(dx.f32(), dW.f32(), db.f32(), dy.f32(),
                                                      x.f32(), W.f32(), N, I, O));
}

void add_bias(const Tensor& y, const Tensor& b) {
    constexpr const char* op = "add_bias";
    const Device d = common_device(op, {{"y", y}, {"b", b}});
    expect_f32(op, {{"y", y}, {"b", b}});
    const auto [N, O] = expect_rows(op, {"y", y});
    expect_shape(op, {"b", b}, Shape{O});
    kernels::require_device(d, op);
    if (d == Device::cpu) return kernels::add_bias(y.f32(), b.f32(), N, O);
    MESHLM_ON_CUDA(op, kernels::cuda::add_bias(y.f32(), b.f32(), N, O));
}

}  // namespace meshlm::ops

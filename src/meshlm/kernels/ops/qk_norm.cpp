// qk_norm's checks and device dispatch (ops/qk_norm.h).
#include "meshlm/kernels/ops/qk_norm.h"

#include <cstdint>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

namespace {

// The heads fit rows of W columns.
void expect_heads(const char* op, const char* name, const QkNormHeads& h, int W) {
    if (h.col0 < 0 || h.heads < 0 || h.head_dim < 1 ||
        static_cast<std::int64_t>(h.col0) + static_cast<std::int64_t>(h.heads) * h.head_dim > W)
        throw Error(detail::concat(op, ": heads ", h.heads, " x ", h.head_dim, " from column ",
                                   h.col0, " do not fit ", name, "'s rows of ", W));
}

}  // namespace

void qk_norm_forward(const Tensor& x, const Tensor& rstd, const QkNormHeads& h, float eps) {
    constexpr const char* op = "qk_norm_forward";
    const Device d = common_device(op, {{"x", x}}, {{"rstd", rstd}});
    expect_f32(op, {{"x", x}, {"rstd", rstd}});
    const auto [N, W] = expect_rows(op, {"x", x});
    expect_heads(op, "x", h, W);
    if (present(rstd)) expect_shape(op, {"rstd", rstd}, Shape{N, h.heads});
    kernels::require_device(d, op);
    float* rows = x.f32() + h.col0;
    if (d == Device::cpu)
        return kernels::qk_norm_forward(rows, W, rstd.f32(), N, h.heads, h.head_dim, eps);
    MESHLM_ON_CUDA(
        op, kernels::cuda::qk_norm_forward(rows, W, rstd.f32(), N, h.heads, h.head_dim, eps));
}

void qk_norm_backward(const Tensor& dx, const Tensor& xhat, const Tensor& rstd,
                      const QkNormHeads& h) {
    constexpr const char* op = "qk_norm_backward";
    const Device d = common_device(op, {{"dx", dx}, {"xhat", xhat}, {"rstd", rstd}});
    expect_f32(op, {{"dx", dx}, {"xhat", xhat}, {"rstd", rstd}});
    const auto [N, W] = expect_rows(op, {"dx", dx});
    const Shape& xs = expect_ndim(op, {"xhat", xhat}, 2);
    if (xs[0] != N) expect_shape(op, {"xhat", xhat}, Shape{N, xs[1]});
    const int Wx = as_int(op, "xhat columns", xs[1]);
    expect_heads(op, "dx", h, W);
    expect_heads(op, "xhat", h, Wx);
    expect_shape(op, {"rstd", rstd}, Shape{N, h.heads});
    kernels::require_device(d, op);
    float* g = dx.f32() + h.col0;
    const float* y = xhat.f32() + h.col0;
    if (d == Device::cpu)
        return kernels::qk_norm_backward(g, W, y, Wx, rstd.f32(), N, h.heads, h.head_dim);
    MESHLM_ON_CUDA(
        op, kernels::cuda::qk_norm_backward(g, W, y, Wx, rstd.f32(), N, h.heads, h.head_dim));
}

}  // namespace meshlm::ops

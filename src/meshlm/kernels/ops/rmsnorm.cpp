// rmsnorm's checks and device dispatch (ops/rmsnorm.h).
#include "meshlm/kernels/ops/rmsnorm.h"

#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

void rmsnorm_forward(const Tensor& out, const Tensor& rstd, const Tensor& x, const Tensor& w,
                     const Tensor& b, float eps) {
    constexpr const char* op = "rmsnorm_forward";
    const Device d =
        common_device(op, {{"x", x}, {"out", out}, {"rstd", rstd}, {"w", w}}, {{"b", b}});
    expect_f32(op, {{"x", x}, {"out", out}, {"rstd", rstd}, {"w", w}, {"b", b}});
    const auto [N, C] = expect_rows(op, {"x", x});
    expect_shape(op, {"out", out}, x.shape);
    expect_shape(op, {"rstd", rstd}, Shape{N});
    expect_shape(op, {"w", w}, Shape{C});
    if (present(b)) expect_shape(op, {"b", b}, Shape{C});
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::rmsnorm_forward(out.f32(), rstd.f32(), x.f32(), w.f32(), b.f32(), N, C,
                                        eps);
    MESHLM_ON_CUDA(op, kernels::cuda::rmsnorm_forward(out.f32(), rstd.f32(), x.f32(), w.f32(),
                                                      b.f32(), N, C, eps));
}

void rmsnorm_backward(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& dout,
                      const Tensor& x, const Tensor& w, const Tensor& rstd) {
    constexpr const char* op = "rmsnorm_backward";
    const Device d = common_device(
        op, {{"x", x}, {"dx", dx}, {"dw", dw}, {"dout", dout}, {"w", w}, {"rstd", rstd}},
        {{"db", db}});
    expect_f32(
        op,
        {{"x", x}, {"dx", dx}, {"dw", dw}, {"db", db}, {"dout", dout}, {"w", w}, {"rstd", rstd}});
    const auto [N, C] = expect_rows(op, {"x", x});
    expect_shape(op, {"dx", dx}, x.shape);
    expect_shape(op, {"dout", dout}, x.shape);
    expect_shape(op, {"w", w}, Shape{C});
    expect_shape(op, {"dw", dw}, Shape{C});
    if (present(db)) expect_shape(op, {"db", db}, Shape{C});
    expect_shape(op, {"rstd", rstd}, Shape{N});
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::rmsnorm_backward(dx.f32(), dw.f32(), db.f32(), dout.f32(), x.f32(), w.f32(),
                                         rstd.f32(), N, C);
    MESHLM_ON_CUDA(op, kernels::cuda::rmsnorm_backward(dx.f32(), dw.f32(), db.f32(), dout.f32(),
                                                       x.f32(), w.f32(), rstd.f32(), N, C));
}

}  // namespace meshlm::ops

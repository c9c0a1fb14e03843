// layernorm's checks and device dispatch (ops/layernorm.h).
#include "meshlm/kernels/ops/layernorm.h"

#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

void layernorm_forward(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                       const Tensor& w, const Tensor& b, float eps) {
    constexpr const char* op = "layernorm_forward";
    const Device d = common_device(
        op, {{"x", x}, {"out", out}, {"mean", mean}, {"rstd", rstd}, {"w", w}}, {{"b", b}});
    expect_f32(op, {{"x", x}, {"out", out}, {"mean", mean}, {"rstd", rstd}, {"w", w}, {"b", b}});
    const auto [N, C] = expect_rows(op, {"x", x});
    expect_shape(op, {"out", out}, x.shape);
    expect_shape(op, {"mean", mean}, Shape{N});
    expect_shape(op, {"rstd", rstd}, Shape{N});
    expect_shape(op, {"w", w}, Shape{C});
    if (present(b)) expect_shape(op, {"b", b}, Shape{C});
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::layernorm_forward(out.f32(), mean.f32(), rstd.f32(), x.f32(), w.f32(),
                                          b.f32(), N, C, eps);
    MESHLM_ON_CUDA(op, kernels::cuda::layernorm_forward(out.f32(), mean.f32(), rstd.f32(), x.f32(),
                                                        w.f32(), b.f32(), N, C, eps));
}

void layernorm_backward(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& dout,
                        const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd) {
    constexpr const char* op = "layernorm_backward";
    const Device d = common_device(op,
                                   {{"x", x},
                                    {"dx", dx},
                                    {"dw", dw},
                                    {"dout", dout},
                                    {"w", w},
                                    {"mean", mean},
                                    {"rstd", rstd}},
                                   {{"db", db}});
    expect_f32(op, {{"x", x},
                    {"dx", dx},
                    {"dw", dw},
                    {"db", db},
                    {"dout", dout},
                    {"w", w},
                    {"mean", mean},
                    {"rstd", rstd}});
    const auto [N, C] = expect_rows(op, {"x", x});
    expect_shape(op, {"dx", dx}, x.shape);
    expect_shape(op, {"dout", dout}, x.shape);
    expect_shape(op, {"w", w}, Shape{C});
    expect_shape(op, {"dw", dw}, Shape{C});
    if (present(db)) expect_shape(op, {"db", db}, Shape{C});
    expect_shape(op, {"mean", mean}, Shape{N});
    expect_shape(op, {"rstd", rstd}, Shape{N});
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::layernorm_backward(dx.f32(), dw.f32(), db.f32(), dout.f32(), x.f32(),
                                           w.f32(), mean.f32(), rstd.f32(), N, C);
    MESHLM_ON_CUDA(
        op, kernels::cuda::layernorm_backward(dx.f32(), dw.f32(), db.f32(), dout.f32(), x.f32(),
                                              w.f32(), mean.f32(), rstd.f32(), N, C));
}

}  // namespace meshlm::ops

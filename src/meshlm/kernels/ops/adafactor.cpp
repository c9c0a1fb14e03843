// Adafactor's passes: checks and device dispatch (ops/adafactor.h).
#include "meshlm/kernels/ops/adafactor.h"

#include <cstddef>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

namespace {

// A run's kernel form and the whole-tensor rows and columns it reaches (its statistics' sizes).
struct Reach {
    kernels::MatrixRun run;
    std::int64_t rows, cols;
};

Reach reach(const char* op, const Tensor& g, const AdafactorRun& r) {
    if (r.width < 1 || r.first < 0 || r.row0 < 0 || r.col0 < 0)
        throw Error(detail::concat(op, ": run {first ", r.first, ", width ", r.width, ", row0 ",
                                   r.row0, ", col0 ", r.col0,
                                   "} (width must be positive, the rest non-negative)"));
    const auto n = static_cast<std::size_t>(g.numel());
    const std::int64_t last_row = n ? (r.first + g.numel() - 1) / r.width : -1;
    return {{n, static_cast<std::size_t>(r.first), r.width, r.row0, r.col0},
            r.row0 + last_row + 1,
            r.col0 + r.width};
}

// A per-row or per-column vector that must reach index need - 1.
void expect_covers(const char* op, const char* name, std::int64_t size, std::int64_t need) {
    if (size < need)
        throw Error(
            detail::concat(op, ": ", name, " has ", size, " elements, the run needs ", need));
}

void expect_scale(const char* op, const Arg& a, std::int64_t need) {
    expect_covers(op, a.name, expect_ndim(op, a, 1)[0], need);
}

}  // namespace

void adafactor_factored_sums(const Tensor& g, const AdafactorRun& run, float eps,
                             std::span<double> row_sums, std::span<double> col_sums) {
    constexpr const char* op = "adafactor_factored_sums";
    const Device d = common_device(op, {{"g", g}});
    expect_f32(op, {{"g", g}});
    const Reach r = reach(op, g, run);
    expect_covers(op, "row_sums", static_cast<std::int64_t>(row_sums.size()), r.rows);
    expect_covers(op, "col_sums", static_cast<std::int64_t>(col_sums.size()), r.cols);
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::adafactor_factored_sums(g.f32(), r.run, eps, row_sums.data(),
                                                col_sums.data());
    MESHLM_ON_CUDA(op, kernels::cuda::adafactor_factored_sums(g.f32(), r.run, eps, row_sums.data(),
                                                              col_sums.data()));
}

double adafactor_factored_sumsq(const Tensor& g, const AdafactorRun& run, const Tensor& row_scale,
                                const Tensor& col_scale) {
    constexpr const char* op = "adafactor_factored_sumsq";
    const Device d =
        common_device(op, {{"g", g}, {"row_scale", row_scale}, {"col_scale", col_scale}});
    expect_f32(op, {{"g", g}, {"row_scale", row_scale}, {"col_scale", col_scale}});
    const Reach r = reach(op, g, run);
    expect_scale(op, {"row_scale", row_scale}, r.rows);
    expect_scale(op, {"col_scale", col_scale}, r.cols);
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::adafactor_factored_sumsq(g.f32(), r.run, row_scale.f32(), col_scale.f32());
    double s = 0;
    MESHLM_ON_CUDA(op, s = kernels::cuda::adafactor_factored_sumsq(g.f32(), r.run, row_scale.f32(),
                                                                   col_scale.f32()));
    return s;
}

void adafactor_factored_apply(const Tensor& p, const Tensor& g, const AdafactorRun& run,
                              const Tensor& row_scale, const Tensor& col_scale, float step,
                              float decay) {
    constexpr const char* op = "adafactor_factored_apply";
    const Device d =
        common_device(op, {{"p", p}, {"g", g}, {"row_scale", row_scale}, {"col_scale", col_scale}});
    expect_f32(op, {{"p", p}, {"g", g}, {"row_scale", row_scale}, {"col_scale", col_scale}});
    expect_shape(op, {"g", g}, p.shape);
    const Reach r = reach(op, g, run);
    expect_scale(op, {"row_scale", row_scale}, r.rows);
    expect_scale(op, {"col_scale", col_scale}, r.cols);
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::adafactor_factored_apply(p.f32(), g.f32(), r.run, row_scale.f32(),
                                                 col_scale.f32(), step, decay);
    MESHLM_ON_CUDA(op, kernels::cuda::adafactor_factored_apply(
                           p.f32(), g.f32(), r.run, row_scale.f32(), col_scale.f32(), step, decay));
}

void adafactor_factored_scales(const Tensor& stats, const Tensor& scales, const Tensor& means,
                               std::int64_t rows, float beta) {
    constexpr const char* op = "adafactor_factored_scales";
    const Device d = common_device(op, {{"stats", stats}, {"scales", scales}, {"means", means}});
    expect_f32(op, {{"stats", stats}, {"scales", scales}, {"means", means}});
    const std::int64_t n = expect_ndim(op, {"stats", stats}, 1)[0];
    expect_shape(op, {"scales", scales}, stats.shape);
    expect_shape(op, {"means", means}, stats.shape);
    if (rows < 1 || rows >= n)
        throw Error(detail::concat(op, ": ", rows, " rows of ", n, " statistics (rows and columns ",
                                   "both need one)"));
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::adafactor_factored_scales(stats.f32(), scales.f32(), means.f32(), rows,
                                                  n - rows, beta);
    MESHLM_ON_CUDA(op, kernels::cuda::adafactor_factored_scales(stats.f32(), scales.f32(),
                                                                means.f32(), rows, n - rows, beta));
}

double adafactor_moment(const Tensor& v, const Tensor& g, float beta, float eps) {
    constexpr const char* op = "adafactor_moment";
    const Device d = common_device(op, {{"v", v}, {"g", g}});
    expect_f32(op, {{"v", v}, {"g", g}});
    expect_shape(op, {"g", g}, v.shape);
    kernels::require_device(d, op);
    const auto n = static_cast<std::size_t>(v.numel());
    if (d == Device::cpu) return kernels::adafactor_moment(v.f32(), g.f32(), n, beta, eps);
    double s = 0;
    MESHLM_ON_CUDA(op, s = kernels::cuda::adafactor_moment(v.f32(), g.f32(), n, beta, eps));
    return s;
}

void adafactor_apply(const Tensor& p, const Tensor& g, const Tensor& v, float step, float decay) {
    constexpr const char* op = "adafactor_apply";
    const Device d = common_device(op, {{"p", p}, {"g", g}, {"v", v}});
    expect_f32(op, {{"p", p}, {"g", g}, {"v", v}});
    expect_shape(op, {"g", g}, p.shape);
    expect_shape(op, {"v", v}, p.shape);
    kernels::require_device(d, op);
    const auto n = static_cast<std::size_t>(p.numel());
    if (d == Device::cpu)
        return kernels::adafactor_apply(p.f32(), g.f32(), v.f32(), n, step, decay);
    MESHLM_ON_CUDA(op, kernels::cuda::adafactor_apply(p.f32(), g.f32(), v.f32(), n, step, decay));
}

}  // namespace meshlm::ops

// Host-read sums: checks and device dispatch (ops/stats.h).
#include "meshlm/kernels/ops/stats.h"

#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

double sum(const Tensor& x) {
    constexpr const char* op = "sum";
    const Device d = common_device(op, {{"x", x}});
    expect_f32(op, {{"x", x}});
    expect_ndim(op, {"x", x}, 1);
    kernels::require_device(d, op);
    const auto n = static_cast<std::size_t>(x.numel());
    if (d == Device::cpu) return kernels::sum_f64(x.f32(), n);
    double s = 0;
    MESHLM_ON_CUDA(op, s = kernels::cuda::sum_f64(x.f32(), n));
    return s;
}

double abs_sum(const Tensor& x) {
    constexpr const char* op = "abs_sum";
    const Device d = common_device(op, {{"x", x}}, {}, Strides::allowed);
    expect_f32(op, {{"x", x}});
    const auto [rows, width] = expect_rows(op, {"x", x});
    const int ld = as_int(op, "row stride", row_stride(op, {"x", x}));
    kernels::require_device(d, op);
    if (d == Device::cpu) return kernels::abs_sum_rows(x.f32(), rows, width, ld);
    double s = 0;
    MESHLM_ON_CUDA(op, s = kernels::cuda::abs_sum_rows(x.f32(), rows, width, ld));
    return s;
}

double attention_score_abs_sum(const Tensor& qkv, int B, int T, int H, int Hkv, int D,
                               float scale) {
    constexpr const char* op = "attention_score_abs_sum";
    const Device d = common_device(op, {{"qkv", qkv}});
    expect_f32(op, {{"qkv", qkv}});
    if (B < 1 || T < 1 || D < 1 || Hkv < 1 || H % Hkv != 0)
        throw Error(detail::concat(op, ": B ", B, ", T ", T, ", D ", D, ", H ", H, ", Hkv ", Hkv,
                                   ": expected positive sizes and H a multiple of Hkv"));
    const std::int64_t N = static_cast<std::int64_t>(B) * T;
    expect_shape(op, {"qkv", qkv}, Shape{N, static_cast<std::int64_t>(H + 2 * Hkv) * D});
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::attention_score_abs_sum(qkv.f32(), B, T, H, Hkv, D, scale);
    double s = 0;
    MESHLM_ON_CUDA(op,
                   s = kernels::cuda::attention_score_abs_sum(qkv.f32(), B, T, H, Hkv, D, scale));
    return s;
}

}  // namespace meshlm::ops

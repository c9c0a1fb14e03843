// sum_squares, scale and clamp: checks and device dispatch (ops/clip.h).
#include "meshlm/kernels/ops/clip.h"

#include <cstddef>

#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

namespace {

// x's device, once x is checked to be a present f32 view.
Device flat_f32(const char* op, const Tensor& x) {
    const Device d = common_device(op, {{"x", x}});
    expect_f32(op, {{"x", x}});
    kernels::require_device(d, op);
    return d;
}

}  // namespace

double sum_squares(const Tensor& x) {
    constexpr const char* op = "sum_squares";
    const Device d = flat_f32(op, x);
    const auto n = static_cast<std::size_t>(x.numel());
    if (d == Device::cpu) return kernels::sum_squares(x.f32(), n);
    double s = 0;
    MESHLM_ON_CUDA(op, s = kernels::cuda::sum_squares(x.f32(), n));
    return s;
}

void scale(const Tensor& x, float s) {
    constexpr const char* op = "scale";
    const Device d = flat_f32(op, x);
    const auto n = static_cast<std::size_t>(x.numel());
    if (d == Device::cpu) return kernels::scale(x.f32(), s, n);
    MESHLM_ON_CUDA(op, kernels::cuda::scale(x.f32(), s, n));
}

void clamp(const Tensor& x, float limit) {
    constexpr const char* op = "clamp";
    const Device d = flat_f32(op, x);
    const auto n = static_cast<std::size_t>(x.numel());
    if (d == Device::cpu) return kernels::clamp(x.f32(), limit, n);
    MESHLM_ON_CUDA(op, kernels::cuda::clamp(x.f32(), limit, n));
}

}  // namespace meshlm::ops

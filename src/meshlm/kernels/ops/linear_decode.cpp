// linear_decode's checks and device dispatch (ops/linear_decode.h).
#include "meshlm/kernels/ops/linear_decode.h"

#include <cstdint>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

void linear_decode(const Tensor& y, const Tensor& x, const Tensor& W, const Tensor& bias) {
    constexpr const char* op = "linear_decode";
    const Device d = common_device(op, {{"x", x}, {"y", y}, {"W", W}}, {{"bias", bias}});
    expect_f32(op, {{"x", x}, {"y", y}, {"bias", bias}});
    if (W.dtype != DType::f32 && W.dtype != DType::bf16)
        throw Error(detail::concat(op, ": W is ", dtype_name(W.dtype), ", expected f32 or bf16"));
    const auto [M, I] = expect_rows(op, {"x", x});
    const Shape& ws = expect_ndim(op, {"W", W}, 2);
    const int O = as_int(op, "W rows", ws[0]);
    expect_shape(op, {"W", W}, Shape{O, I});
    expect_shape(op, {"y", y}, Shape{M, O});
    if (present(bias)) expect_shape(op, {"bias", bias}, Shape{O});
    kernels::require_device(d, op);
    const auto* w16 = static_cast<const std::uint16_t*>(W.data);
    if (d == Device::cpu) {
        if (W.dtype == DType::bf16)
            return kernels::linear_decode_bf16(y.f32(), x.f32(), w16, bias.f32(), M, I, O);
        return kernels::linear_decode(y.f32(), x.f32(), W.f32(), bias.f32(), M, I, O);
    }
    MESHLM_ON_CUDA(
        op, W.dtype == DType::bf16
                ? kernels::cuda::linear_decode_bf16(y.f32(), x.f32(), w16, bias.f32(), M, I, O)
                : kernels::cuda::linear_decode(y.f32(), x.f32(), W.f32(), bias.f32(), M, I, O));
}

}  // namespace meshlm::ops

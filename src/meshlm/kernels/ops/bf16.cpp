// The bf16 conversions' checks and device dispatch (ops/bf16.h).
#include "meshlm/kernels/ops/bf16.h"

#include <cstddef>
#include <cstdint>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

namespace {

std::uint16_t* bits(const Tensor& t) {
    return static_cast<std::uint16_t*>(t.data);
}

// out and in of one shape on one device, with the given dtypes; returns the device.
Device same_shape(const char* op, const Tensor& out, DType out_t, const Tensor& in, DType in_t) {
    const Device d = common_device(op, {{"out", out}, {"in", in}});
    expect_dtype(op, {"out", out}, out_t);
    expect_dtype(op, {"in", in}, in_t);
    expect_shape(op, {"out", out}, in.shape);
    kernels::require_device(d, op);
    return d;
}

// The row copy's sizes: out [rows, cols] from columns [col0, col0 + cols) of in [rows, ld].
struct RowCopy {
    Device d;
    int rows, cols, ld;
};
RowCopy row_copy(const char* op, const Tensor& out, DType out_t, const Tensor& in, DType in_t,
                 int col0) {
    const Device d = common_device(op, {{"out", out}, {"in", in}});
    expect_dtype(op, {"out", out}, out_t);
    expect_dtype(op, {"in", in}, in_t);
    const Shape& so = expect_ndim(op, {"out", out}, 2);
    const Shape& si = expect_ndim(op, {"in", in}, 2);
    const int rows = as_int(op, "rows", so[0]), cols = as_int(op, "columns", so[1]);
    const int ld = as_int(op, "in's columns", si[1]);
    expect_shape(op, {"in", in}, Shape{rows, ld});
    if (col0 < 0 || col0 > ld - cols)
        throw Error(detail::concat(op, ": columns [", col0, ", ", col0 + std::int64_t{cols},
                                   ") are outside in's ", ld, " columns"));
    kernels::require_device(d, op);
    return {d, rows, cols, ld};
}

}  // namespace

void to_bf16(const Tensor& out, const Tensor& in) {
    constexpr const char* op = "to_bf16";
    const Device d = same_shape(op, out, DType::bf16, in, DType::f32);
    const auto n = static_cast<std::size_t>(in.numel());
    if (d == Device::cpu) return kernels::to_bf16(bits(out), in.f32(), n);
    MESHLM_ON_CUDA(op, kernels::cuda::to_bf16(bits(out), in.f32(), n));
}

void round_bf16(const Tensor& out, const Tensor& in) {
    constexpr const char* op = "round_bf16";
    const Device d = same_shape(op, out, DType::f32, in, DType::f32);
    const auto n = static_cast<std::size_t>(in.numel());
    if (d == Device::cpu) return kernels::round_bf16(out.f32(), in.f32(), n);
    MESHLM_ON_CUDA(op, kernels::cuda::round_bf16(out.f32(), in.f32(), n));
}

void from_bf16(const Tensor& out, const Tensor& in) {
    constexpr const char* op = "from_bf16";
    const Device d = same_shape(op, out, DType::f32, in, DType::bf16);
    const auto n = static_cast<std::size_t>(in.numel());
    if (d == Device::cpu) return kernels::from_bf16(out.f32(), bits(in), n);
    MESHLM_ON_CUDA(op, kernels::cuda::from_bf16(out.f32(), bits(in), n));
}

void to_bf16_rows(const Tensor& out, const Tensor& in, int col0) {
    constexpr const char* op = "to_bf16_rows";
    const auto [d, rows, cols, ld] = row_copy(op, out, DType::bf16, in, DType::f32, col0);
    const float* src = in.f32() + col0;
    if (d == Device::cpu) return kernels::to_bf16_rows(bits(out), src, rows, cols, ld);
    MESHLM_ON_CUDA(op, kernels::cuda::to_bf16_rows(bits(out), src, rows, cols, ld));
}

void from_bf16_rows(const Tensor& out, const Tensor& in, int col0) {
    constexpr const char* op = "from_bf16_rows";
    const auto [d, rows, cols, ld] = row_copy(op, out, DType::f32, in, DType::bf16, col0);
    const std::uint16_t* src = bits(in) + col0;
    if (d == Device::cpu) return kernels::from_bf16_rows(out.f32(), src, rows, cols, ld);
    MESHLM_ON_CUDA(op, kernels::cuda::from_bf16_rows(out.f32(), src, rows, cols, ld));
}

void from_bf16_in_place(const Tensor& buf) {
    constexpr const char* op = "from_bf16_in_place";
    const Device d = common_device(op, {{"buf", buf}});
    expect_dtype(op, {"buf", buf}, DType::f32);
    kernels::require_device(d, op);
    const auto n = static_cast<std::size_t>(buf.numel());
    if (d == Device::cpu) return kernels::from_bf16_in_place(buf.f32(), n);
    MESHLM_ON_CUDA(op, kernels::cuda::from_bf16_in_place(buf.f32(), n));
}

}  // namespace meshlm::ops

// attention's checks and device dispatch (ops/attention.h).
#include "meshlm/kernels/ops/attention.h"

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

namespace {

constexpr int kMaxHeadDim = 256;  // both backends' per-row tiles

struct Dims {
    int B, T, D;
};

Dims check(const char* op, const Tensor& qkv, const Tensor& out, const Tensor& lse,
           const Tensor& alibi_slopes, const AttentionHeads& h) {
    const Shape& s = expect_ndim(op, {"qkv", qkv}, 3);
    if (h.H < 1 || h.Hkv < 1 || h.H % h.Hkv != 0)
        throw Error(detail::concat(op, ": H = ", h.H, " query heads need a positive multiple of ",
                                   "Hkv = ", h.Hkv, " key/value heads"));
    const std::int64_t width = h.H + 2 * static_cast<std::int64_t>(h.Hkv);
    if (s[2] % width != 0 || s[2] / width < 1 || s[2] / width > kMaxHeadDim)
        throw Error(detail::concat(op, ": qkv rows of ", s[2], " are not (H + 2 Hkv) D = ", width,
                                   " D with 1 <= D <= ", kMaxHeadDim));
    const Dims d{as_int(op, "B", s[0]), as_int(op, "T", s[1]), static_cast<int>(s[2] / width)};
    expect_shape(op, {"out", out}, Shape{d.B, d.T, static_cast<std::int64_t>(h.H) * d.D});
    expect_shape(op, {"lse", lse}, Shape{d.B, h.H, d.T});
    if (present(alibi_slopes)) expect_shape(op, {"alibi_slopes", alibi_slopes}, Shape{h.H});
    return d;
}

}  // namespace

void attention_forward(const Tensor& out, const Tensor& lse, const Tensor& qkv,
                       const Tensor& alibi_slopes, const AttentionHeads& h) {
    constexpr const char* op = "attention_forward";
    const Device d = common_device(op, {{"qkv", qkv}, {"out", out}, {"lse", lse}},
                                   {{"alibi_slopes", alibi_slopes}});
    expect_f32(op, {{"qkv", qkv}, {"out", out}, {"lse", lse}, {"alibi_slopes", alibi_slopes}});
    const auto [B, T, D] = check(op, qkv, out, lse, alibi_slopes, h);
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::attention_forward(out.f32(), lse.f32(), qkv.f32(), B, T, h.H, h.Hkv, D,
                                          alibi_slopes.f32(), nullptr, h.scale);
    MESHLM_ON_CUDA(op, kernels::cuda::attention_forward(out.f32(), lse.f32(), qkv.f32(), B, T, h.H,
                                                        h.Hkv, D, alibi_slopes.f32(), h.scale));
}

void attention_backward(const Tensor& dqkv, const Tensor& dout, const Tensor& out,
                        const Tensor& lse, const Tensor& qkv, const Tensor& alibi_slopes,
                        const AttentionHeads& h) {
    constexpr const char* op = "attention_backward";
    const Device d = common_device(
        op, {{"qkv", qkv}, {"dqkv", dqkv}, {"dout", dout}, {"out", out}, {"lse", lse}},
        {{"alibi_slopes", alibi_slopes}});
    expect_f32(op, {{"qkv", qkv},
                    {"dqkv", dqkv},
                    {"dout", dout},
                    {"out", out},
                    {"lse", lse},
                    {"alibi_slopes", alibi_slopes}});
    const auto [B, T, D] = check(op, qkv, out, lse, alibi_slopes, h);
    expect_shape(op, {"dqkv", dqkv}, qkv.shape);
    expect_shape(op, {"dout", dout}, out.shape);
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::attention_backward(dqkv.f32(), dout.f32(), out.f32(), lse.f32(), qkv.f32(),
                                           B, T, h.H, h.Hkv, D, alibi_slopes.f32(), nullptr,
                                           h.scale);
    MESHLM_ON_CUDA(op, kernels::cuda::attention_backward(dqkv.f32(), dout.f32(), out.f32(),
                                                         lse.f32(), qkv.f32(), B, T, h.H, h.Hkv, D,
                                                         alibi_slopes.f32(), h.scale));
}

}  // namespace meshlm::ops

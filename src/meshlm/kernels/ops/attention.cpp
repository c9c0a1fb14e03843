// attention's checks and device dispatch (ops/attention.h).
#include "meshlm/kernels/ops/attention.h"

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/attention_check.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

namespace {

// qkv, out and the optional slopes (attention_check.h), and lse [B, H, T].
QkvDims check(const char* op, const Tensor& qkv, const Tensor& out, const Tensor& lse,
              const Tensor& alibi_slopes, const AttentionHeads& h) {
    const QkvDims d = expect_qkv(op, qkv, {"out", out}, alibi_slopes, h);
    expect_shape(op, {"lse", lse}, Shape{d.B, h.H, d.T});
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
                                          alibi_slopes.f32(), h.dropout, h.scale, h.dist);
    MESHLM_ON_CUDA(
        op, kernels::cuda::attention_forward(out.f32(), lse.f32(), qkv.f32(), B, T, h.H, h.Hkv, D,
                                             alibi_slopes.f32(), h.dropout, h.scale, h.dist));
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
                                           B, T, h.H, h.Hkv, D, alibi_slopes.f32(), h.dropout,
                                           h.scale, h.dist);
    MESHLM_ON_CUDA(op, kernels::cuda::attention_backward(
                           dqkv.f32(), dout.f32(), out.f32(), lse.f32(), qkv.f32(), B, T, h.H,
                           h.Hkv, D, alibi_slopes.f32(), h.dropout, h.scale, h.dist));
}

}  // namespace meshlm::ops

// attention_act's checks and device dispatch (ops/attention_act.h).
#include "meshlm/kernels/ops/attention_act.h"

#include <cstdint>

#include "meshlm/core/error.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

namespace {

constexpr int kMaxHeadDim = 256;  // the CUDA kernels' per-thread dims

struct Dims {
    int B, T, D;
};

// qkv's layout, the heads, act and the [B, T, H D] view `o` (out or dout).
Dims check(const char* op, const Tensor& qkv, const Arg& o, const Tensor& alibi,
           const AttentionHeads& h, const kernels::AttnActParams& act) {
    if (act.act == kernels::AttnAct::softmax)
        throw Error(detail::concat(op, ": act is softmax (attention_forward / _backward have it)"));
    const Shape& s = expect_ndim(op, {"qkv", qkv}, 3);
    if (h.H < 1 || h.Hkv < 1 || h.H % h.Hkv != 0)
        throw Error(detail::concat(op, ": H = ", h.H, " query heads need a positive multiple of ",
                                   "Hkv = ", h.Hkv, " key/value heads"));
    const std::int64_t width = h.H + 2 * static_cast<std::int64_t>(h.Hkv);
    if (s[2] % width != 0 || s[2] / width < 1 || s[2] / width > kMaxHeadDim)
        throw Error(detail::concat(op, ": qkv rows of ", s[2], " are not (H + 2 Hkv) D = ", width,
                                   " D with 1 <= D <= ", kMaxHeadDim));
    const Dims d{as_int(op, "B", s[0]), as_int(op, "T", s[1]), static_cast<int>(s[2] / width)};
    expect_shape(op, o, Shape{d.B, d.T, static_cast<std::int64_t>(h.H) * d.D});
    if (present(alibi)) expect_shape(op, {"alibi_slopes", alibi}, Shape{h.H});
    return d;
}

}  // namespace

void attention_act_forward(const Tensor& out, const Tensor& qkv, const Tensor& alibi,
                           const AttentionHeads& h, const kernels::AttnActParams& act) {
    constexpr const char* op = "attention_act_forward";
    const Device d = common_device(op, {{"qkv", qkv}, {"out", out}}, {{"alibi_slopes", alibi}});
    expect_f32(op, {{"qkv", qkv}, {"out", out}, {"alibi_slopes", alibi}});
    const auto [B, T, D] = check(op, qkv, {"out", out}, alibi, h, act);
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::attention_act_forward(out.f32(), qkv.f32(), B, T, h.H, h.Hkv, D,
                                              alibi.f32(), act, h.scale);
    MESHLM_ON_CUDA(op, kernels::cuda::attention_act_forward(out.f32(), qkv.f32(), B, T, h.H, h.Hkv,
                                                            D, alibi.f32(), act, h.scale));
}

void attention_act_backward(const Tensor& dqkv, const Tensor& dout, const Tensor& qkv,
                            const Tensor& alibi, const AttentionHeads& h,
                            const kernels::AttnActParams& act) {
    constexpr const char* op = "attention_act_backward";
    const Device d = common_device(op, {{"qkv", qkv}, {"dqkv", dqkv}, {"dout", dout}},
                                   {{"alibi_slopes", alibi}});
    expect_f32(op, {{"qkv", qkv}, {"dqkv", dqkv}, {"dout", dout}, {"alibi_slopes", alibi}});
    const auto [B, T, D] = check(op, qkv, {"dout", dout}, alibi, h, act);
    expect_shape(op, {"dqkv", dqkv}, qkv.shape);
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::attention_act_backward(dqkv.f32(), dout.f32(), qkv.f32(), B, T, h.H, h.Hkv,
                                               D, alibi.f32(), act, h.scale);
    MESHLM_ON_CUDA(
        op, kernels::cuda::attention_act_backward(dqkv.f32(), dout.f32(), qkv.f32(), B, T, h.H,
                                                  h.Hkv, D, alibi.f32(), act, h.scale));
}

}  // namespace meshlm::ops

// attention_act's checks and device dispatch (ops/attention_act.h).
#include "meshlm/kernels/ops/attention_act.h"

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/attention_check.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

namespace {

// The shared qkv check (attention_check.h); softmax belongs to attention_forward / _backward.
QkvDims check(const char* op, const Tensor& qkv, const Arg& o, const Tensor& alibi,
              const AttentionHeads& h, const kernels::AttnActParams& act) {
    if (act.act == kernels::AttnAct::softmax)
        throw Error(detail::concat(op, ": act is softmax (attention_forward / _backward have it)"));
    return expect_qkv(op, qkv, o, alibi, h);
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

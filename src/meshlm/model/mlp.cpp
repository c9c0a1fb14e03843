#include "meshlm/model/mlp.h"

#include "meshlm/kernels/ops/activation.h"
#include "meshlm/kernels/ops/bf16.h"
#include "meshlm/model/linear.h"

namespace meshlm {
namespace k = kernels;

namespace {
k::Act act_of(const std::string& mlp) {
    if (mlp == "gelu" || mlp == "geglu") return k::Act::gelu;
    if (mlp == "relu") return k::Act::relu;
    if (mlp == "sqrelu") return k::Act::sqrelu;
    if (mlp == "swiglu") return k::Act::silu;
    return k::Act::gelu_tanh;
}
}  // namespace

Mlp::Mlp(const ModelConfig& cfg, int model)
    : C(cfg.d_model), Fl(cfg.mlp_width() / model), gated(cfg.gated_mlp()), act(act_of(cfg.mlp)) {}

void Mlp::up(float* h, float* a, const float* x, const BlockTensors& w, int N,
             const std::uint16_t* x16, std::uint16_t* a16) const {
    linear::forward(linear, device, h, x, w.fc_w, w.fc_b, N, C, h_width(), false, bf16, x16);
    const Tensor hv = view(h, {N, h_width()}, device), av = view(a, {N, Fl}, device);
    if (gated)
        ops::glu_forward(act, av, hv);
    else
        ops::activation_forward(act, av, hv);
    if (a16) ops::to_bf16(view(a16, {N, Fl}, device), av);
}

void Mlp::down(float* out, const float* a, const BlockTensors& w, int N, bool accumulate,
               const std::uint16_t* a16, bool bias) const {
    linear::forward(linear, device, out, a, w.out_w, bias ? w.out_b : nullptr, N, Fl, C, accumulate,
                    bf16, a16);
}

void Mlp::backward(float* dx, BlockTensors& g, float* da, float* dh, const float* dout,
                   const float* x, const float* h, const float* a, const BlockTensors& w, int N,
                   bool accumulate, const std::uint16_t* x16, const std::uint16_t* a16) const {
    linear::backward(device, da, g.out_w, nullptr, dout, a, w.out_w, N, Fl, C, false, bf16, a16);
    const Tensor dhv = view(dh, {N, h_width()}, device), hv = view(h, {N, h_width()}, device);
    const Tensor dav = view(da, {N, Fl}, device);
    if (gated)
        ops::glu_backward(act, dhv, hv, dav);
    else
        ops::activation_backward(act, dhv, hv, dav);
    linear::backward(device, dx, g.fc_w, g.fc_b, dh, x, w.fc_w, N, C, h_width(), accumulate, bf16,
                     x16);
}

}  // namespace meshlm

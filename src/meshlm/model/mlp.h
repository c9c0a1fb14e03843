// The MLP of a block, this model rank's slice of its width (Fl = F / M):
//   h   = x Wfc^T + bfc       (N, Fl), or (N, 2 Fl) gate | up for gated units
//   a   = act(h)              gelu_tanh, gelu, relu, sqrelu; swiglu: silu(gate) * up,
//                             geglu: gelu(gate) * up
//   out = a Wo^T              (N, C): this rank's partial sum (row-parallel; the block reduces
//                             it and adds bo once)
// Backward: da = dout Wo, dWo += dout^T a;  dh = act'(h) da (GLU: both halves);
//           dx (partial) = dh Wfc, dWfc += dh^T x, dbfc += sum dh
#pragma once

#include <cstdint>

#include "meshlm/kernels/ops/op_params.h"
#include "meshlm/model/linear.h"
#include "meshlm/model/model_config.h"
#include "meshlm/model/tensors.h"

namespace meshlm {

struct Mlp {
    int C, Fl;
    bool gated;
    kernels::Act act;
    Bf16Scratch* bf16 = nullptr;  // the GEMMs in bf16 (linear.h); null: fp32
    // The forward linears' kernel (linear.h); null: linear::forward's GEMMs.
    const LinearKernel* linear = nullptr;
    Device device = Device::cpu;  // where its views live (the ops dispatch on it)

    Mlp(const ModelConfig& cfg, int model);
    int h_width() const { return gated ? 2 * Fl : Fl; }

    // x16 / a16 (bf16 precision, may be null): x in bf16 as given; a16 receives a in bf16,
    // which down and backward then read instead of a.
    void up(float* h, float* a, const float* x, const BlockTensors& w, int N,
            const std::uint16_t* x16 = nullptr, std::uint16_t* a16 = nullptr) const;
    // With `bias`, adds bo too (a decoder's fused kernel; training adds it after the reduce).
    void down(float* out, const float* a, const BlockTensors& w, int N, bool accumulate,
              const std::uint16_t* a16 = nullptr, bool bias = false) const;
    // da (N, Fl) and dh (N, h_width()) are scratch.
    void backward(float* dx, BlockTensors& g, float* da, float* dh, const float* dout,
                  const float* x, const float* h, const float* a, const BlockTensors& w, int N,
                  bool accumulate, const std::uint16_t* x16 = nullptr,
                  const std::uint16_t* a16 = nullptr) const;
};

}  // namespace meshlm

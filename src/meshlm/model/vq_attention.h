// Transformer-VQ's attention sublayer (seed 001, single-head gated attention), on the block's
// normalized input x (N = B T rows, width C):
//   q | k = x Wqk^T;  q = rmsnorm(q) dk^-1/4, k = rmsnorm(k) dk^-1/4   (no gains)
//   v | g = silu(x Wvg^T)                                              (dv each)
//   z_t = argmin_s |k_t - c_s|^2 over the codebook c_s = c_sum_s / max(c_count_s, 0.01)
//   k^_t = c_z (the forward value; the gradient goes to k unchanged: straight-through)
//   o = attention(q, k^, v) with Transformer-XL biases (kernels::vq_attention_forward):
//       rel_d = dk^-1/4 phi(d) Wr^T, phi(d) = [sin(d w_j) | cos(d w_j)], w_j = pe_lam^(-2j/C);
//       u, vb scaled by dk^-1/4
//   out = (o * g) Wo^T
// The commitment loss c_beta mean_t |k_t - c_z|^2 adds its gradient to k (its value is
// reported apart from the language-model loss). The codebook takes no gradient: backward adds
// the batch's statistics -- per code the sum of its keys and their count -- into the gradient
// slots of c_sum and c_count, which the trainer sums over micro-batches and data ranks and folds
// in as an exponential moving average (ParamSlice::ema_decay) instead of an optimizer step.
#pragma once

#include <cstdint>
#include <vector>

#include "meshlm/core/model_comm.h"
#include "meshlm/kernels/device_buffer.h"
#include "meshlm/kernels/ops/op_params.h"
#include "meshlm/kernels/ops/vq_attention.h"
#include "meshlm/model/linear.h"
#include "meshlm/model/model_config.h"
#include "meshlm/model/tensors.h"

namespace meshlm {

// Tensor parallelism over M model ranks (the seed's TP branch): v | g and the output projection
// are split (this rank's dv = vq_d_v / M columns; the output a partial sum the block reduces);
// q, k, the positions and the codebook are replicated, so every rank computes the same scores
// and probabilities. Backward sums the query / key gradients over the ranks (each rank's value
// columns give a part of dP = dO V^T) and only rank 0 adds their input gradient.
struct VqAttention {
    int C, dk, dv, S, L;  // dv: this model rank's value / gate width
    kernels::VqReduction reduction;
    float eps, scale, c_beta;  // scale = dk^-1/4
    std::vector<float> table;  // (L + 1, C) the sinusoids of distances 0..L
    Bf16Scratch* bf16 = nullptr;
    Device device = Device::cpu;      // where the projections' views live (place())
    kernels::DeviceBuffer table_dev;  // off the CPU: table's copy there

    // Puts the sublayer on d: its views there and, off the CPU, a copy of the table.
    void place(Device d);
    Tensor table_view() const;  // (L + 1, C) on device

    // What the forward keeps for the backward, over N rows.
    struct Acts {
        float* qk;        // (N, 2 dk) normalized and scaled
        float* rstd;      // (N, 2)
        float* vg;        // (N, 2 dv) before silu
        float* act;       // (N, 2 dv) v | g after silu
        float* o;         // (N, dv) attention output
        float* lse;       // (N)
        float* err;       // (N) squared quantization error
        std::int32_t* z;  // (N) codes
    };
    // Per layer: the codebook, the position vectors and the scaled biases (rebuilt per call).
    struct Derived {
        float *codebook, *rel, *u, *vb;
    };

    explicit VqAttention(const ModelConfig& cfg, int model = 1);
    kernels::VqAttnShape shape() const { return {L, S, dk, dv, reduction}; }
    ops::VqTables tables(const Derived& d) const;
    // Acts over N rows, in two parts: the attention core's output (o, lse), which recomputing
    // would rerun the linear-time pass for, and the rest (projections, codes), which
    // project_in() rebuilds. acts_at(one base) lays both out together.
    std::size_t core_floats(std::size_t N) const;
    std::size_t rest_floats(std::size_t N) const;
    std::size_t act_floats(std::size_t N) const { return core_floats(N) + rest_floats(N); }
    Acts acts_at(float* base, std::size_t N) const;
    Acts acts_at(float* core, float* rest, std::size_t N) const;
    std::size_t derived_floats() const;
    Derived derived_at(float* base) const;
    std::size_t scratch_floats(std::size_t N) const;  // forward / backward scratch

    void derive(Derived& d, const BlockTensors& w) const;
    // out (=, or += when accumulate) = the sublayer on x (x16: x in bf16 when non-null).
    // Returns the mean squared quantization error over the rows.
    // state: null, or B per-sequence states the rows continue from and advance (decoding).
    // The same as project_in, core, project_out in turn (recomputation reruns the first two).
    float forward(float* out, const Acts& a, const Derived& d, float* scratch, const float* x,
                  const std::uint16_t* x16, const BlockTensors& w, int B, int T, bool accumulate,
                  kernels::VqAttnState* state = nullptr) const;
    // q | k, v | g, the codes and their squared errors; returns the mean squared error.
    float project_in(const Acts& a, const Derived& d, const float* x, const std::uint16_t* x16,
                     const BlockTensors& w, int N) const;
    void core(const Acts& a, const Derived& d, int B, int T, kernels::VqAttnState* state) const;
    void project_out(float* out, const Acts& a, float* scratch, const BlockTensors& w, int N,
                     bool accumulate) const;
    // dx (=, or += when accumulate) for dout; gradients into g, the codebook's statistics into
    // g.c_sum / g.c_count; commit_scale = c_beta * (the loss's per-token scale).
    // mp: the model-parallel group (null = one rank); dx is this rank's part of the sum. state:
    // the B states the forward started from (null = empty), which take no gradient.
    void backward(float* dx, BlockTensors& g, const float* dout, const Acts& a, const Derived& d,
                  float* scratch, const float* x, const std::uint16_t* x16, const BlockTensors& w,
                  int B, int T, float loss_scale, bool accumulate, ModelComm* mp = nullptr,
                  const kernels::VqAttnState* state = nullptr) const;
};

}  // namespace meshlm

// The attention layer of a block, for this model rank's heads (all of them on one rank):
//   qkv = x Wqkv^T + bqkv            (N, (Hl + 2 Kl) D): q heads | k heads | v heads
//   q, k rotated by RoPE             (position = rope; the first rope_dim dims of each head)
//   y   = softmax(scale q k^T - slope (i - j) + t5[h, i - j], causal) v, query head h reading
//         kv head h / (H / K) (GQA; ALiBi's term only with position = alibi, T5's learned
//         distance bias only with t5_bias), dropout on the probabilities
//   out = y Wp^T                     (N, C): column-parallel in, row-parallel out, so under
//                                    tensor parallelism `out` is this rank's partial sum; the
//                                    block reduces it and adds bp once
// Backward from dout (replicated):
//   dy = dout Wp, dWp += dout^T y;  dqkv = attention^T(dy);  rotate dq, dk back;
//   dx (partial) = dqkv Wqkv, dWqkv += dqkv^T x, dbqkv += sum dqkv
#pragma once

#include <cstdint>
#include <vector>

#include "meshlm/kernels/device_buffer.h"
#include "meshlm/kernels/ops/op_params.h"
#include "meshlm/model/linear.h"
#include "meshlm/model/model_config.h"
#include "meshlm/model/tensors.h"

namespace meshlm {

struct Attention {
    int C, D, H, K, Hl, Kl, head0;  // H, K: whole model; Hl, Kl: this rank's; head0: first head
    bool rope;
    int rope_dim;
    bool interleaved;
    float scale;                 // of the scores: 1/sqrt(D), or muP's 1/D (ModelConfig)
    bool qk_norm;                // RMSNorm over each q and k head (after rotary: it commutes)
    kernels::AttnActParams act;  // the nonlinearity (model.attn_act); softmax by default
    float norm_eps;
    std::vector<float> inv_freq;  // rope_dim / 2
    std::vector<float> slopes;    // this rank's heads' ALiBi slopes; empty without ALiBi
    // Both tables as the ops read them: on `device` (place() copies them there).
    Bf16Scratch* bf16 = nullptr;  // the projections' GEMMs in bf16 (linear.h); null: fp32
    // The forward projections' kernel (linear.h); null: linear::forward's GEMMs.
    const LinearKernel* linear = nullptr;
    Device device = Device::cpu;  // where its views live (the ops dispatch on it)
    // position t5_bias: this rank's heads' bias per distance, shared by the layers; the owner
    // resolves it from the table before a pass (t5_bias.h) and folds its gradient after.
    const kernels::DistanceBias* dist = nullptr;
    kernels::DeviceBuffer inv_freq_dev, slopes_dev;  // the tables off the CPU (place())

    Attention(const ModelConfig& cfg, int model, int rank);
    // Moves the layer's views to `d`, with copies of its tables in that device's memory.
    void place(Device d);
    Tensor inv_freq_view() const;
    Tensor slopes_view() const;  // empty without ALiBi
    int qkv_width() const { return (Hl + 2 * Kl) * D; }
    int y_width() const { return Hl * D; }

    // x16 (bf16 precision, may be null): x already in bf16, read instead of x.
    void project_in(float* qkv, const float* x, const BlockTensors& w, int N, int T,
                    const std::uint16_t* x16 = nullptr, float* qk_rstd = nullptr) const;
    void project(float* qkv, const float* x, const BlockTensors& w, int N,
                 const std::uint16_t* x16 = nullptr) const;  // no rotary
    void core(float* y, float* lse, const float* qkv, int B, int T,
              const kernels::AttnDropout* drop) const;
    // With `bias`, adds bp too (a decoder's fused kernel; training adds it after the reduce).
    void project_out(float* out, const float* y, const BlockTensors& w, int N, bool accumulate,
                     bool bias = false) const;
    // dx (=, or += when accumulate) this rank's part of dL/dx; dy (N, Hl D) and dqkv (N, qkv
    // width) are scratch.
    void backward(float* dx, BlockTensors& g, float* dy, float* dqkv, const float* dout,
                  const float* x, const float* qkv, const float* y, const float* lse,
                  const BlockTensors& w, int B, int T, const kernels::AttnDropout* drop,
                  bool accumulate, const std::uint16_t* x16 = nullptr,
                  const float* qk_rstd = nullptr) const;
    // Applies RoPE to rows of qkv (stride qkv_width()) at positions pos (null: n % T), then
    // with qk_norm normalizes the q and k heads, saving rstd[N, Hl + Kl] when non-null.
    void rotate(float* qkv, const std::int32_t* pos, int N, int T, float* qk_rstd = nullptr) const;
    int qk_rstd_width() const { return qk_norm ? Hl + Kl : 0; }  // floats of rstd per row
};

}  // namespace meshlm

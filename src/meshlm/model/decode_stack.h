// The body both KV-cache decoders (Decoder, PagedDecoder) share: the weights, as given or as a
// bf16 copy, the activations of up to max_rows rows, and the per-row pass through the blocks
// with the decode kernels. Per block, for M rows:
//   ln = norm1(x); qkv = ln Wqkv^T + b; rotate q, k at each row's position
//   y = attend(layer, qkv): the caller stores the rows' keys and values in its cache and
//       attends to it
//   sequential: x += y Wp^T + bp; x += mlp(norm2(x))      parallel: x += (y Wp^T + bp) + mlp(ln)
// then logits = head(norm_f(x)) for the rows the caller packs first. Every product is a decode
// kernel (linear_decode), whose rows are computed independently of the other rows, the batch
// size and the thread count.
//
// The stack lives on one device: its rows, the parameters it is given and its bf16 copy are
// that device's memory; callers hand it host ids (tokens, positions), which it stages there.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "meshlm/core/buffer.h"
#include "meshlm/core/param_layout.h"
#include "meshlm/kernels/device_buffer.h"
#include "meshlm/model/attention.h"
#include "meshlm/model/mlp.h"
#include "meshlm/model/model_config.h"
#include "meshlm/model/norm.h"
#include "meshlm/model/t5_bias.h"
#include "meshlm/model/tensors.h"

namespace meshlm {

// With bf16, steps read bf16 copies of the weight matrices (made by set_params), halving the
// bytes a step reads; activations and sums stay fp32.
enum class DecodePrecision { fp32, bf16 };

class DecodeStack {
  public:
    // attend(layer, qkv, y): qkv [M, attention().qkv_width()] holds the rows' rotated q | k | v;
    // store k and v in the cache and write the attention output y [M, attention().y_width()].
    using Attend = std::function<void(int layer, const float* qkv, float* y)>;

    DecodeStack(const ModelConfig& cfg, int max_rows, DecodePrecision precision,
                Device device = Device::cpu);

    const Attention& attention() const { return attn_; }
    const ModelTensors& weights() const { return w_; }
    const float* params() const { return params_; }
    int max_rows() const { return max_rows_; }
    Device device() const { return device_; }
    DecodePrecision precision() const { return precision_; }

    // Binds the flat parameters (transformer_layout, host memory) for later passes: off the CPU
    // they are copied to the device first (params() is then that copy); bf16 makes its copy,
    // T5's bias its table per distance.
    void set_params(const float* params);
    // Rows 0..M-1 of the residual stream: the embeddings of tokens[m] (plus their learned
    // positions pos[m]); host arrays.
    void embed(int M, const std::int32_t* tokens, const std::int32_t* pos);
    // Moves row from to row to (packing the rows that want logits first).
    void move_row(int from, int to);
    // Every block over rows 0..M-1, at positions pos[0..M-1] (a host array).
    void blocks(int M, const std::int32_t* pos, const Attend& attend);
    // logits [n, V] of rows 0..n-1 on device(); returns logits().
    float* head(int n);
    float* logits() { return logits_.data(); }
    const float* logits() const { return logits_.data(); }
    // Rows 0..n-1 of logits() in host memory (the rows themselves on the CPU, a copy elsewhere).
    float* host_logits(int n);

  private:
    void linear(float* y, const float* x, const float* W, const float* bias, int M, int I, int O);

    ModelConfig cfg_;
    ParamLayout layout_;
    TensorBinder binder_;  // reads layout_
    Norm norm_;
    Attention attn_;
    Mlp mlp_;
    // position t5_bias: the table per distance up to max_distance (the kernels read longer
    // distances at the last row), resolved by set_params; attn_.dist points at it.
    std::unique_ptr<T5Bias> t5_;
    int max_rows_;
    DecodePrecision precision_;
    Device device_;  // where the weights and rows live (the ops dispatch on it)
    ModelTensors w_;
    const float* params_ = nullptr;   // the buffer w_ points into, on device_
    kernels::FloatArray dparams_;     // off the CPU: the parameters copied to the device
    kernels::DeviceBuffer params16_;  // bf16 copy of params (bf16 precision only)
    kernels::FloatArray x_, ln_, qkv_, y_, proj_, h_, a_, mlp_out_, mean_, rstd_, logits_;
    Buffer<float> host_logits_;        // off the CPU: the logits read back
    kernels::DeviceIds tokens_, pos_;  // the pass's ids on device_
};

}  // namespace meshlm

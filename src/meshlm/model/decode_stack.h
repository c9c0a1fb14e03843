// The body both KV-cache decoders (Decoder, PagedDecoder) share: the weights, as given or as a
// bf16 copy, the activations of up to max_rows rows, and the per-row pass through the blocks.
// Each block is the Block (block.h), the same sequence training runs, given a decode pass:
//   attention: attend(layer, qkv) -- the caller stores the rows' keys and values in its cache
//              and attends to it; q, k rotated at each row's position first
//   linears:   the decode kernel (linear_decode) with the biases fused, over the weights as
//              given or their bf16 copy; a branch closes as x + (branch + bias)
// then logits = head(norm_f(x)) for the rows the caller packs first. Every product is a decode
// kernel, whose rows are computed independently of the other rows, the batch size and the
// thread count.
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
#include "meshlm/model/block.h"
#include "meshlm/model/model_config.h"
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

    const Attention& attention() const { return block_.attn; }
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
    // The blocks' and the head's linears: linear_decode over the weights or their bf16 copy.
    struct Linear final : LinearKernel {
        DecodeStack* stack;
        explicit Linear(DecodeStack* s) : stack(s) {}
        void forward(float* y, const float* x, const float* W, const float* b, int M, int I, int O,
                     bool accumulate) const override;
    };
    void linear(float* y, const float* x, const float* W, const float* bias, int M, int I, int O);
    float* x() { return x_[cur_].data(); }  // the residual stream's rows

    ModelConfig cfg_;
    ParamLayout layout_;
    TensorBinder binder_;  // reads layout_
    Block block_;
    Linear linear_{this};  // block_'s layers multiply through it
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
    // The residual stream alternates between x_[0] and x_[1] (cur_ holds it): a block reads
    // one and writes the other. mid_: after a sequential block's attention, or a parallel
    // block's second branch before it joins the first.
    kernels::FloatArray x_[2], ln_, qkv_, y_, mid_, h_, a_, mean_, rstd_, logits_;
    int cur_ = 0;
    Buffer<float> host_logits_;        // off the CPU: the logits read back
    kernels::DeviceIds tokens_, pos_;  // the pass's ids on device_
};

}  // namespace meshlm

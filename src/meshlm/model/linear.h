// The linear layer y = x W^T + b over rows, W [O, I] (nn.Linear's layout). Under tensor
// parallelism a linear is column-parallel (W's rows split: this rank computes its block of y's
// columns from the replicated x) or row-parallel (W's columns split: this rank's y is a partial
// sum over its block of x's columns). The block that uses them reduces the partial sums and the
// input gradients over the model ranks (Megatron's g and f), once per block where two linears
// share an input or an output.
//   forward   y = x W^T + b                       (or y += x W^T: a second branch into y)
//   backward  dx = dy W (or dx += dy W),  dW += dy^T x,  db += sum_n dy
//
// Precision (train.precision). fp32: fp32 GEMMs. bf16: each GEMM rounds its operands (x, W,
// dy) to bf16 at the call into a Bf16Scratch -- the fp32 masters and every output stay fp32 --
// and multiplies with fp32 products and sums (kernels::gemm_bf16). An input the caller already
// keeps in bf16 (x16) is used as it is. Outputs wider than the scratch (the vocabulary head) go
// through in column chunks.
//
// The GEMMs and bias adds are ops (kernels/ops/) over views on `device`; the bf16 roundings are
// still CPU kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "meshlm/core/tensor.h"

namespace meshlm {

// The GEMMs' precision (train.precision).
enum class Precision { fp32, bf16 };
// fp32 | bf16 | auto (bf16 where the CPU has native bf16 dot products, else fp32).
Precision parse_precision(const std::string& name);
const char* precision_name(Precision p);

// bf16 operands of one linear call at a time: rows x max_in inputs, max_out x max_in weights,
// rows x max_out output gradients. The memory is the caller's (the activation plan).
struct Bf16Scratch {
    std::uint16_t *x = nullptr, *w = nullptr, *dy = nullptr;
    int rows = 0, max_in = 0, max_out = 0;
    // bf16 elements of each buffer.
    std::size_t x_size() const { return static_cast<std::size_t>(rows) * max_in; }
    std::size_t w_size() const { return static_cast<std::size_t>(max_out) * max_in; }
    std::size_t dy_size() const { return static_cast<std::size_t>(rows) * max_out; }
};

// A kernel the layers' forward linears can go through instead of linear::forward: the
// decoders' skinny linear_decode over their bf16 weight copy (decode_stack.h).
class LinearKernel {
  public:
    virtual ~LinearKernel() = default;
    // y[N, O] (=, or += when accumulate) x[N, I] W[O, I]^T + b (b may be null).
    virtual void forward(float* y, const float* x, const float* W, const float* b, int N, int I,
                         int O, bool accumulate) const = 0;
};

namespace linear {

// y[N, O] (=, or += when accumulate) x[N, I] W[O, I]^T + b (b may be null). With bf16 non-null
// the GEMM is in bf16; x16 (may be null), x already in bf16.
void forward(Device device, float* y, const float* x, const float* W, const float* b, int N, int I,
             int O, bool accumulate = false, Bf16Scratch* bf16 = nullptr,
             const std::uint16_t* x16 = nullptr);
// forward() through `kernel` when non-null (bf16 and x16 are the training GEMMs' only).
void forward(const LinearKernel* kernel, Device device, float* y, const float* x, const float* W,
             const float* b, int N, int I, int O, bool accumulate, Bf16Scratch* bf16,
             const std::uint16_t* x16);
// dx[N, I] (=, or += when accumulate; null skips), dW += dy^T x, db += sum_n dy (null skips).
void backward(Device device, float* dx, float* dW, float* db, const float* dy, const float* x,
              const float* W, int N, int I, int O, bool accumulate = false,
              Bf16Scratch* bf16 = nullptr, const std::uint16_t* x16 = nullptr);

}  // namespace linear
}  // namespace meshlm

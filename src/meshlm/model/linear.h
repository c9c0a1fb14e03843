// The linear layer y = x W^T + b over rows, W [O, I] (nn.Linear's layout). Under tensor
// parallelism a linear is column-parallel (W's rows split: this rank computes its block of y's
// columns from the replicated x) or row-parallel (W's columns split: this rank's y is a partial
// sum over its block of x's columns). The block that uses them reduces the partial sums and the
// input gradients over the model ranks (Megatron's g and f), once per block where two linears
// share an input or an output.
//   forward   y = x W^T + b                       (or y += x W^T: a second branch into y)
//   backward  dx = dy W (or dx += dy W),  dW += dy^T x,  db += sum_n dy
#pragma once

namespace meshlm::linear {

// y[N, O] (=, or += when accumulate) x[N, I] W[O, I]^T + b (b may be null).
void forward(float* y, const float* x, const float* W, const float* b, int N, int I, int O,
             bool accumulate = false);
// dx[N, I] (=, or += when accumulate; null skips), dW += dy^T x, db += sum_n dy (null skips).
void backward(float* dx, float* dW, float* db, const float* dy, const float* x, const float* W,
              int N, int I, int O, bool accumulate = false);

}  // namespace meshlm::linear

// The op set: one declaration per op. cpu/ implements them (BLAS for GEMM, OpenMP + AVX2 for
// the rest); a CUDA backend will implement the same declarations.
//
// Shape names: B batch, T time, C width, H heads, D head dim (C/H), V vocab, N rows (B*T).
// Conventions: row-major; weights [out, in]; "+=" means the op accumulates into its output
// (gradients of shared inputs, e.g. the residual stream), "=" means it overwrites.
// Every op is deterministic for a fixed thread count.
#pragma once

#include <cstddef>
#include <cstdint>

namespace meshlm::kernels {

// Threads used by the kernels and by BLAS. Call once before any op.
void set_threads(int n);
int threads();

// True while the calling thread is inside gemm(): lets tests tell the GEMM library's own
// scratch allocations from ours.
bool in_gemm();

// C[M,N] = alpha * op(A) op(B) + beta * C, row-major, op(X) = X or X^T.
// lda/ldb/ldc are row strides (0 = dense). Runs single-threaded inside a parallel region.
void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc);

// out[N,C] = wte[tokens[n]] + wpe[n % T]
void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int N,
                       int T, int C);
// dwte[tokens[n]] += dout[n]; dwpe[n % T] += dout[n]
void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int N,
                        int T, int C);

// out = (x - mean) * rstd * w + b per row; saves mean[N], rstd[N].
void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, int N, int C, float eps);
// dx += ..., dw += ..., db += ...
void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                        const float* w, const float* mean, const float* rstd, int N, int C);

// y[N,O] = x[N,I] W[O,I]^T + bias[O] (bias may be null)
void linear_forward(float* y, const float* x, const float* W, const float* bias, int N, int I,
                    int O);
// dx = dy W (overwrites; null skips), dW += dy^T x, dbias += sum_n dy (null skips)
void linear_backward(float* dx, float* dW, float* dbias, const float* dy, const float* x,
                     const float* W, int N, int I, int O);

// GELU, tanh approximation (GPT-2's gelu_new). out = gelu(x); dx = gelu'(x) * dout.
void gelu_forward(float* out, const float* x, std::size_t n);
void gelu_backward(float* dx, const float* x, const float* dout, std::size_t n);

// out = a + b
void residual_forward(float* out, const float* a, const float* b, std::size_t n);

// Causal self-attention over qkv[B,T,3C] (q | k | v, head h at columns h*D..h*D+D of each).
// out[B,T,C]; lse[B,H,T] saves each row's log-sum-exp for the backward. Memory is O(T) per
// thread (online softmax over key blocks), never O(T^2).
void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int C, int H);
// dqkv = gradient w.r.t. qkv (overwrites). Recomputes probabilities from qkv and lse.
void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse,
                        const float* qkv, int B, int T, int C, int H);

// Fused softmax + cross-entropy over logits[N,V] (row stride ldv >= V).
// losses[n] = -log softmax(logits[n])[targets[n]]; rows with target < 0 are ignored (loss 0).
// If dlogits_scale != 0, logits are overwritten in place by the gradient
// dlogits_scale * (softmax - onehot) (zero for ignored rows); no second [N,V] buffer exists.
void softmax_cross_entropy(float* logits, float* losses, const int32_t* targets, int N, int V,
                           int ldv, float dlogits_scale);

// --- Decoding (inference only) ---

// out[i] = in[i] rounded to bf16 (nearest, ties to even), as its 16 bits.
void to_bf16(std::uint16_t* out, const float* in, std::size_t n);
// y[M,O] = x[M,I] W[O,I]^T + bias[O] (bias may be null) for few rows M (one per sequence
// being decoded): reads W once per 4 rows of x. A row's result does not depend on M or the
// thread count (bitwise), so batching sequences never changes them.
void linear_decode(float* y, const float* x, const float* W, const float* bias, int M, int I,
                   int O);
// The same with W in bf16 (to_bf16); products and sums in fp32.
void linear_decode_bf16(float* y, const float* x, const std::uint16_t* W, const float* bias, int M,
                        int I, int O);

// One query per row over a KV cache. q[M, ldq] (head h at columns h*D..h*D+D); caches
// [S, H, Tmax, D], row m attends to positions 0..T-1 of sequence seq[m] (null: m).
// out[M,C] = softmax(q K^T / sqrt(D)) V per head.
void attention_decode(float* out, const float* q, int ldq, const float* k_cache,
                      const float* v_cache, const int32_t* seq, int M, int T, int Tmax, int C,
                      int H);

// sum of squares of x[0..n): float sums over blocks of 1024, block sums in double;
// deterministic for a fixed thread count.
double sum_squares(const float* x, std::size_t n);
// x *= s
void scale(float* x, float s, std::size_t n);

// One AdamW step on a contiguous range. Decoupled weight decay (PyTorch AdamW):
// p -= lr*wd*p; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
void adamw(float* p, const float* g, float* m, float* v, std::size_t n, float lr, float beta1,
           float beta2, float eps, float weight_decay, long step);

// Peak fp32 GFLOP/s of this machine on `threads` threads, measured by a short FMA loop.
double measure_peak_gflops(int threads, double seconds = 0.2);

}  // namespace meshlm::kernels

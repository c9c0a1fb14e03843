// The CUDA backend: the same op declarations as kernels.h (same arguments, same "=" / "+="
// contracts, row-major, weights [out, in]), every pointer a device pointer. Defined only in a
// CUDA build (-DMESHLM_CUDA=ON); the view ops (kernels/ops/) are the only callers. Kernels run
// on the legacy default stream in call order and return without waiting for the device.
//
// What the CPU kernels have and these do not (yet): a cross-entropy row stride (ldv = V).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "meshlm/kernels/ops/op_params.h"

namespace meshlm::kernels::cuda {

// --- Runtime (runtime.cpp) ---
// Devices the runtime reports: 0 without a driver or a GPU (asked once, then remembered).
int device_count();
std::string unavailable_reason();  // the runtime's error, e.g. "no CUDA-capable device"
void set_device(int index);
// cudaMalloc'd and zeroed; free(nullptr) is a no-op. copy_bytes: any direction (unified
// addressing), waits until done.
void* malloc_zeroed(std::size_t bytes);
void free(void* p) noexcept;
void copy_bytes(void* dst, const void* src, std::size_t bytes);
// Waits for every kernel launched so far; throws on an error any of them raised.
void synchronize();

// --- GEMM (gemm.cpp, cuBLASLt) ---
// C[M,N] = alpha * op(A) op(B) + beta * C, row-major, fp32 compute (no TF32).
void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc);
// bf16 operands (their 16 bits), fp32 accumulation and C.
void gemm_bf16(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const std::uint16_t* A,
               int lda, const std::uint16_t* B, int ldb, float beta, float* C, int ldc);

// --- Linear (linear.cu: bias kernels around gemm) ---
void linear_forward(float* y, const float* x, const float* W, const float* bias, int N, int I,
                    int O);
void linear_backward(float* dx, float* dW, float* dbias, const float* dy, const float* x,
                     const float* W, int N, int I, int O);
void add_bias(float* y, const float* b, int N, int O);

// --- Norms (layernorm.cu, rmsnorm.cu) ---
void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, int N, int C, float eps);
void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                        const float* w, const float* mean, const float* rstd, int N, int C);
void rmsnorm_forward(float* out, float* rstd, const float* x, const float* w, const float* b, int N,
                     int C, float eps);
void rmsnorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                      const float* w, const float* rstd, int N, int C);

// --- Activations (activation.cu) ---
void activation_forward(Act act, float* out, const float* x, std::size_t n);
void activation_backward(Act act, float* dx, const float* x, const float* dout, std::size_t n);
void glu_forward(Act act, float* out, const float* h, int N, int F);
void glu_backward(Act act, float* dh, const float* h, const float* dout, int N, int F);

// --- Loss, optimizer (cross_entropy.cu, adamw.cu) ---
void softmax_cross_entropy(float* logits, float* losses, const int32_t* targets, int N, int V,
                           float dlogits_scale, float z_loss);
// Host-read sums (stats.cu): sum of x in double; sum |x| over rows of width at stride ld; sum
// of |scale q_i . k_j| over b, h and every (i, j) pair.
double sum_f64(const float* x, std::size_t n);
double abs_sum_rows(const float* x, int rows, int width, int ld);
double attention_score_abs_sum(const float* qkv, int B, int T, int H, int Hkv, int D, float scale);
// kernels.h's Transformer-VQ codebook pieces and nearest-code search (vq_codebook.cu). The VQ
// attention itself has no CUDA kernel yet (ops/vq_attention.cpp refuses it by name).
void vq_quantize(std::int32_t* z, float* err, const float* k, int ldk, const float* codebook, int N,
                 int S, int dk);
void vq_codebook(float* codebook, const float* c_sum, const float* c_count, int S, int dk);
void vq_commit_grad(float* dk, int ldd, const float* k, int ldk, const float* codebook,
                    const std::int32_t* z, int N, int w, float scale);
void vq_codebook_stats(float* c_sum, float* c_count, const float* k, int ldk, const std::int32_t* z,
                       int N, int S, int dk);
// kernels.h's element-wise fill, mul_rows and axpy (elementwise.cu).
void fill(float* x, float value, std::size_t n);
void mul_rows(float* out, int ldo, const float* a, int lda, const float* b, int ldb, int N, int C);
void axpy(float* y, const float* x, float alpha, std::size_t n);
// kernels.h's kv_store (kv_store.cu); indices are the caller's to keep in range.
void kv_store(float* k_pool, float* v_pool, const float* qkv, int W, const int32_t* tables, int n,
              const int32_t* pos, int M, int block, int H, int Hkv, int D);
// vocab_parallel.h's phases of a cross-entropy over a vocabulary shard (vocab_parallel.cu).
void ce_row_max(float* row_max, const float* logits, const int32_t* targets, int N, int Vl,
                int ldv);
void ce_row_sums(float* stats, float* logits, const int32_t* targets, const float* row_max, int v0,
                 int N, int Vl, int ldv, bool store);
void ce_finish(float* logits, float* losses, const int32_t* targets, const float* row_max,
               const float* stats, int v0, int N, int Vl, int ldv, float dlogits_scale,
               float z_loss);
void adamw(float* p, const float* g, float* m, float* v, std::size_t n, float lr, float beta1,
           float beta2, float eps, float weight_decay, long step, float grad_scale);

// --- Positions and embeddings (rope.cu, embedding.cu) ---
void rope_forward(float* x, int ld, const int32_t* pos, int N, int T, int heads, int D,
                  int rope_dim, bool interleaved, const float* inv_freq);
void rope_backward(float* dx, int ld, const int32_t* pos, int N, int T, int heads, int D,
                   int rope_dim, bool interleaved, const float* inv_freq);
// vocab_parallel.h's embedding: out[n] = wte[tokens[n] - v0] for tokens in [v0, v0 + Vl), else
// 0; dwte[tokens[n] - v0] += dout[n], each element summed in token order (no atomics).
void embedding_forward_vocab_range(float* out, const int32_t* tokens, const float* wte, int v0,
                                   int Vl, int N, int C);
void embedding_backward_vocab_range(float* dwte, const float* dout, const int32_t* tokens, int v0,
                                    int Vl, int N, int C);
// out[n] += wpe[n % T]; dwpe[n % T] += dout[n], in n order.
void position_embedding_forward(float* out, const float* wpe, int N, int T, int C);
void position_embedding_backward(float* dwpe, const float* dout, int N, int T, int C);
// kernels.h's positions (positions.cu): rounded learned rows, scaled sinusoids and the scale's
// gradient.
void position_embedding_forward_bf16(float* out, const float* wpe, int N, int T, int C);
void sinusoid_position_forward(float* out, const float* table, const float* scale,
                               const int32_t* pos0, int N, int T, int C, bool round_scale);
void sinusoid_position_backward(float* dscale, const float* dout, const float* table,
                                const int32_t* pos0, int N, int T, int C);

// --- Causal attention (attention_forward.cu, attention_backward.cu) ---
// kernels.h's contract (qkv layout, GQA, ALiBi, scale 0 = 1/sqrt(D), lse saved, dqkv
// overwritten, dropout on the probabilities with the CPU's mask; null or rate 0: none; a
// distance bias and its gradient, null: none); head dim D <= kMaxAttentionHeadDim.
inline constexpr int kMaxAttentionHeadDim = 256;
void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int H, int Hkv,
                       int D, const float* alibi_slopes, const AttnDropout* dropout, float scale,
                       const DistanceBias* dist);
void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse,
                        const float* qkv, int B, int T, int H, int Hkv, int D,
                        const float* alibi_slopes, const AttnDropout* dropout, float scale,
                        const DistanceBias* dist);
// T5's table per distance and its gradient folded back (distance_bias.cu): kernels.h's
// contracts, the fold bitwise the CPU's.
void distance_bias_expand(float* dist, const float* table, const int32_t* buckets, int H, int L,
                          int NB);
void distance_bias_fold(float* grad_table, const float* grad, const int32_t* buckets, int H, int L,
                        int NB);

// --- Optimizer passes, gradient clipping, bf16 conversions, residual ---
// (lion.cu, adafactor*.cu, clip.cu, bf16.cu, residual.cu) kernels.h's contracts. The element-wise
// ops and the bf16 conversions give the CPU's bits (the optimizer steps up to FMA contraction);
// a reduction returned as a double copies it to the host (waiting for the device) and is
// deterministic: fixed grids and fixed-order trees, no atomics. adafactor_factored_sums adds
// into row_sums / col_sums in HOST memory.
void lion(float* p, const float* g, float* m, std::size_t n, float lr, float beta1, float beta2,
          float weight_decay, float grad_scale);
void adafactor_factored_sums(const float* g, MatrixRun run, float eps, double* row_sums,
                             double* col_sums);
double adafactor_factored_sumsq(const float* g, MatrixRun run, const float* row_scale,
                                const float* col_scale);
void adafactor_factored_apply(float* p, const float* g, MatrixRun run, const float* row_scale,
                              const float* col_scale, float step, float decay);
void adafactor_factored_scales(float* stats, float* scales, const float* means, std::int64_t R,
                               std::int64_t C, float beta);
double adafactor_moment(float* v, const float* g, std::size_t n, float beta, float eps);
void adafactor_apply(float* p, const float* g, const float* v, std::size_t n, float step,
                     float decay);
double sum_squares(const float* x, std::size_t n);
void scale(float* x, float s, std::size_t n);
void clamp(float* x, float limit, std::size_t n);
void to_bf16(std::uint16_t* out, const float* in, std::size_t n);
void round_bf16(float* out, const float* in, std::size_t n);
void to_bf16_rows(std::uint16_t* out, const float* in, int rows, int cols, int ld);
void from_bf16(float* out, const std::uint16_t* in, std::size_t n);
void from_bf16_rows(float* out, const std::uint16_t* in, int rows, int cols, int ld);
void from_bf16_in_place(float* buf, std::size_t n);
void residual_forward(float* out, const float* a, const float* b, std::size_t n);
void bias_residual(float* out, const float* b1, const float* b2, const float* r, int N, int C);

// --- Model and decode ops ---
// Dropout (dropout.cu): kernels.h's contract; the mask is bitwise the CPU's (philox.cuh).
void dropout(float* x, int N, int C, float rate, std::uint64_t seed, std::uint64_t stream,
             std::int64_t row0);
// A bias's gradient (bias_backward.cu): db[o] += sum_n dy[n, o], no atomics (deterministic).
void bias_backward(float* db, const float* dy, int N, int O);
// RMSNorm of each q / k head, in place (qk_norm.cu): kernels.h's contract.
void qk_norm_forward(float* x, int ld, float* rstd, int N, int heads, int D, float eps);
void qk_norm_backward(float* dx, int ld, const float* xhat, int ldx, const float* rstd, int N,
                      int heads, int D);
// One query per row over a KV cache (attention_decode.cu): kernels.h's contracts, D <=
// kMaxAttentionHeadDim. attention_paged's block tables are one device array [M, table_stride]
// (row m's table at tables + m * table_stride), lens a device array; a row with lens < 1 gets
// zeros (the CPU refuses it; its lengths are not read back to check).
void attention_decode(float* out, const float* q, int ldq, const float* k_cache,
                      const float* v_cache, const int32_t* seq, int M, int T, int Tmax, int H,
                      int Hkv, int D, const float* alibi_slopes, float scale,
                      const AttnActParams* act, const DistanceBias* dist);
void attention_paged(float* out, const float* q, int ldq, const float* k_pool, const float* v_pool,
                     const int32_t* tables, int table_stride, const int32_t* lens, int M, int block,
                     int H, int Hkv, int D, const float* alibi_slopes, float scale,
                     const AttnActParams* act, const DistanceBias* dist);
// Linear layers for decoding (linear_decode.cu): kernels.h's contracts; a row's result does not
// depend on M (one warp's fixed-order sum per element).
void linear_decode(float* y, const float* x, const float* W, const float* bias, int M, int I,
                   int O);
void linear_decode_bf16(float* y, const float* x, const std::uint16_t* W, const float* bias, int M,
                        int I, int O);
// Causal attention with a nonlinearity other than softmax (attention_act.cu): kernels.h's
// contracts, D <= kMaxAttentionHeadDim; the backward overwrites dqkv, deterministically.
void attention_act_forward(float* out, const float* qkv, int B, int T, int H, int Hkv, int D,
                           const float* alibi_slopes, const AttnActParams& act, float scale);
void attention_act_backward(float* dqkv, const float* dout, const float* qkv, int B, int T, int H,
                            int Hkv, int D, const float* alibi_slopes, const AttnActParams& act,
                            float scale);
// Transformer-VQ's attention (vq_attention.cu, vq_attention_backward.cu): kernels.h's contracts
// (its results differ from the CPU's in rounding only; both VqReduction values get the serial
// cache), needing 2 L + S <= 6144 columns (a row's scores in shared memory). state: B host
// states (not device memory), packed and copied to the device by the call; the forward copies
// the advanced ones back before it returns. Scratch is allocated per call.
void vq_attention_forward(float* out, float* lse, const float* q, int ldq, const std::int32_t* z,
                          const float* v, int ldv, const float* codebook, const float* rel,
                          const float* u, const float* vb, int B, int T, VqAttnShape shape,
                          VqAttnState* state);
void vq_attention_backward(float* dq, float* dk, float* dv, float* du, float* dvb, float* drel,
                           const float* dout, const float* out, const float* lse, const float* q,
                           int ldq, const std::int32_t* z, const float* v, int ldv,
                           const float* codebook, const float* rel, const float* u, const float* vb,
                           int B, int T, VqAttnShape shape, const VqAttnState* state);

}  // namespace meshlm::kernels::cuda

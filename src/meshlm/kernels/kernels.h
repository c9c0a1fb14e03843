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
#include <vector>

#include "meshlm/kernels/ops/op_params.h"

namespace meshlm::kernels {

// True while the calling thread is inside gemm(): lets tests tell the GEMM library's own
// scratch allocations from ours.
bool in_gemm();

// C[M,N] = alpha * op(A) op(B) + beta * C, row-major, op(X) = X or X^T.
// lda/ldb/ldc are row strides (0 = dense). Runs single-threaded inside a parallel region.
void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc);

// The same with bf16 operands (as their 16 bits, to_bf16), fp32 products, sums and C. On a CPU
// without native bf16 dot products (native_bf16() false) the operands are widened to fp32 for
// gemm(): the same values up to summation order, at fp32 speed plus the widening.
void gemm_bf16(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const std::uint16_t* A,
               int lda, const std::uint16_t* B, int ldb, float beta, float* C, int ldc);
// True where the CPU has AVX512-BF16 dot products (and MESHLM_NO_NATIVE_BF16 is unset or 0:
// tests and benchmarks use it to take the widening path on any CPU).
bool native_bf16();
// out[i] = in[i] (bf16 bits) as fp32: exact.
void from_bf16(float* out, const std::uint16_t* in, std::size_t n);
// The same over rows x cols of `in` with row stride ld, into dense rows of out.
void from_bf16_rows(float* out, const std::uint16_t* in, int rows, int cols, int ld);
// The same in place: buf's first 2n bytes hold n bf16 values, which become its n floats.
void from_bf16_in_place(float* buf, std::size_t n);

// out = (x - mean) * rstd * w + b per row (b may be null); saves mean[N], rstd[N].
void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, int N, int C, float eps);
// dx += ..., dw += ..., db += ... (db may be null)
void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                        const float* w, const float* mean, const float* rstd, int N, int C);

// RMSNorm: out = x * rstd * w (+ b when b is non-null), rstd = 1 / sqrt(mean(x^2) + eps) per
// row; saves rstd[N].
void rmsnorm_forward(float* out, float* rstd, const float* x, const float* w, const float* b, int N,
                     int C, float eps);
// dx += ..., dw += ..., db += ... (db may be null)
void rmsnorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                      const float* w, const float* rstd, int N, int C);

// y[N,O] = x[N,I] W[O,I]^T + bias[O] (bias may be null)
void linear_forward(float* y, const float* x, const float* W, const float* bias, int N, int I,
                    int O);
// dx = dy W (overwrites; null skips), dW += dy^T x, dbias += sum_n dy (null skips)
void linear_backward(float* dx, float* dW, float* dbias, const float* dy, const float* x,
                     const float* W, int N, int I, int O);
// db[O] += sum_n dy[n, O] (a bias's gradient; also of one added after a reduction).
void bias_backward(float* db, const float* dy, int N, int O);
// y[N, O] += b[O] per row (a bias after an accumulating GEMM or a reduction).
void add_bias(float* y, const float* b, int N, int O);

// out = act(x); dx = act'(x) * dout (overwrites dx).
void activation_forward(Act act, float* out, const float* x, std::size_t n);
void activation_backward(Act act, float* dx, const float* x, const float* dout, std::size_t n);
// Gated linear units (SwiGLU = silu, GeGLU = gelu): h[N, 2F] holds gate | up per row (gate in
// columns 0..F-1, up in F..2F-1); out[N, F] = act(gate) * up. dh[N, 2F] = (act'(gate) * up *
// dout | act(gate) * dout) (overwrites).
void glu_forward(Act act, float* out, const float* h, int N, int F);
void glu_backward(Act act, float* dh, const float* h, const float* dout, int N, int F);

// out = a + b
void residual_forward(float* out, const float* a, const float* b, std::size_t n);
// The end of a residual branch: out[n, c] = ((out[n, c] + b1[c]) + b2[c]) + r[n, c] over
// out, r [N, C]; b1 and b2 optional (null: that add is skipped). One pass, in this order.
void bias_residual(float* out, const float* b1, const float* b2, const float* r, int N, int C);

// Causal self-attention with grouped key/value heads over qkv[B, T, (H + 2 Hkv) D]: per row the
// H query heads, then Hkv key heads, then Hkv value heads, head h at columns h*D..h*D+D of its
// group. Query head h attends with key/value head h / (H / Hkv) (Hkv = H: multi-head, 1:
// multi-query). Scores scale * q.k (scale 0 = 1/sqrt(D); muP uses 1/D), plus -slope[h] * (i - j)
// when alibi_slopes is non-null, plus the distance bias when dist is non-null.
// out[B, T, H D]; lse[B, H, T] saves each row's log-sum-exp (of the pre-dropout scores) for the
// backward. Memory is O(T) per thread (online softmax over key blocks), never O(T^2).
void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int H, int Hkv,
                       int D, const float* alibi_slopes, const AttnDropout* dropout = nullptr,
                       float scale = 0.f, const DistanceBias* dist = nullptr);
// dqkv = gradient w.r.t. qkv (overwrites; key/value gradients summed over the query heads that
// share them). Recomputes probabilities from qkv and lse.
void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse,
                        const float* qkv, int B, int T, int H, int Hkv, int D,
                        const float* alibi_slopes, const AttnDropout* dropout = nullptr,
                        float scale = 0.f, const DistanceBias* dist = nullptr);

// Attention nonlinearities besides softmax (AttnAct, ops/op_params.h):
// attention_forward / attention_backward's contract (layout, GQA, ALiBi, scale) with act (not
// softmax) instead of softmax; no dropout, no lse: the backward recomputes the scores.
void attention_act_forward(float* out, const float* qkv, int B, int T, int H, int Hkv, int D,
                           const float* alibi_slopes, const AttnActParams& act, float scale = 0.f);
void attention_act_backward(float* dqkv, const float* dout, const float* qkv, int B, int T, int H,
                            int Hkv, int D, const float* alibi_slopes, const AttnActParams& act,
                            float scale = 0.f);

// Rotary position embedding, in place on `heads` heads of width D starting at x's column 0 in
// rows of stride ld (call it on the query heads and on the key heads of qkv). The first rope_dim
// dims of each head rotate by angle pos * inv_freq[i] per pair i (rope_dim / 2 of them):
// interleaved pairs (2i, 2i+1) (GPT-J) or split halves (i, i + rope_dim / 2) (NeoX, Llama).
// Row n's position is pos[n], or n % T when pos is null.
void rope_forward(float* x, int ld, const int32_t* pos, int N, int T, int heads, int D,
                  int rope_dim, bool interleaved, const float* inv_freq);
// The transpose (rotation by -angle), in place on the gradient.
void rope_backward(float* dx, int ld, const int32_t* pos, int N, int T, int heads, int D,
                   int rope_dim, bool interleaved, const float* inv_freq);

// RMSNorm without gains over each of `heads` heads of width D from x's column 0, in rows of
// stride ld, in place (model.qk_norm on q and k); rstd[N, heads] is saved (may be null).
void qk_norm_forward(float* x, int ld, float* rstd, int N, int heads, int D, float eps);
// Its backward in place on the gradient dx (rows of stride ld), from the normalized values xhat
// (rows of stride ldx) and rstd.
void qk_norm_backward(float* dx, int ld, const float* xhat, int ldx, const float* rstd, int N,
                      int heads, int D);

// Inverted dropout, in place: x[n, c] *= keep / (1 - rate) with keep = (uniform >= rate), the
// uniform drawn from Philox(seed, stream) at counter (row0 + n) * C + c, so a mask depends only
// on (seed, stream, global row, column): never on threads, ranks or how rows are batched.
// Draw X is the X-th Philox(seed, stream).uniform() from counter 0 (word X % 4 of block X / 4).
// Applying it to the output gradient with the same arguments is its backward.
void dropout(float* x, int N, int C, float rate, std::uint64_t seed, std::uint64_t stream,
             std::int64_t row0);

// Fused softmax + cross-entropy over logits[N,V] (row stride ldv >= V; columns V..ldv-1 are
// never read or written).
// losses[n] = -log softmax(logits[n])[targets[n]]; rows with target < 0 are ignored (loss 0).
// If dlogits_scale != 0, logits are overwritten in place by the gradient of
// dlogits_scale * (loss + z_loss * lse^2), lse = log sum exp(logits[n]) (PaLM / GPT-J's z-loss):
// dlogits_scale * (softmax - onehot + 2 z_loss lse softmax), zero for ignored rows; no second
// [N,V] buffer exists. The z term enters only the gradient, never `losses`.
void softmax_cross_entropy(float* logits, float* losses, const int32_t* targets, int N, int V,
                           int ldv, float dlogits_scale, float z_loss = 0.f);

// out[i] = in[i] rounded to bf16 (nearest, ties to even), as its 16 bits.
void to_bf16(std::uint16_t* out, const float* in, std::size_t n);
// out[i] = in[i] rounded to bf16, as an fp32 (in place allowed).
void round_bf16(float* out, const float* in, std::size_t n);
// The same over rows x cols of `in` with row stride ld, into dense rows of out.
void to_bf16_rows(std::uint16_t* out, const float* in, int rows, int cols, int ld);

// --- Decoding (inference only) ---
// y[M,O] = x[M,I] W[O,I]^T + bias[O] (bias may be null) for few rows M (one per sequence
// being decoded): reads W once per 4 rows of x. A row's result does not depend on M or the
// thread count (bitwise), so batching sequences never changes them.
void linear_decode(float* y, const float* x, const float* W, const float* bias, int M, int I,
                   int O);
// The same with W in bf16 (to_bf16); products and sums in fp32.
void linear_decode_bf16(float* y, const float* x, const std::uint16_t* W, const float* bias, int M,
                        int I, int O);

// Transformer-VQ's codebook (cpu/vq_codebook.cpp): codebook = c_sum / max(c_count, 0.01) per
// code; dk += scale (k - codebook[z]) over N rows of w (strides ldd, ldk); c_sum[z[n]] += k[n]
// and c_count[z[n]] += 1 in row order (throws on a code outside [0, S)).
void vq_codebook(float* codebook, const float* c_sum, const float* c_count, int S, int dk);
void vq_commit_grad(float* dk, int ldd, const float* k, int ldk, const float* codebook,
                    const std::int32_t* z, int N, int w, float scale);
void vq_codebook_stats(float* c_sum, float* c_count, const float* k, int ldk, const std::int32_t* z,
                       int N, int S, int dk);

// Element-wise (cpu/elementwise.cpp): x = value; out = a * b over N rows of C at row strides
// ldo, lda, ldb; y += alpha x.
void fill(float* x, float value, std::size_t n);
void mul_rows(float* out, int ldo, const float* a, int lda, const float* b, int ldb, int N, int C);
void axpy(float* y, const float* x, float alpha, std::size_t n);

// A decode pass's keys and values into a block pool (ops/attention_decode.h's kv_store; cpu/
// kv_store.cpp): row m's heads go to offset pos[m] % block of block tables[m * n + pos[m] /
// block]. Throws when a row's block index or block is outside the table or the pool.
void kv_store(float* k_pool, float* v_pool, const float* qkv, int W, const std::int32_t* tables,
              int n, const std::int32_t* pos, int M, int blocks, int block, int H, int Hkv, int D);

// Positions the model adds to its embeddings (cpu/positions.cpp):
//   position_embedding_forward_bf16: out[n] += round_bf16(wpe[n % T]) (a bf16 run's learned
//     positions: each row rounded once)
//   sinusoid_position_forward: out[n] += s * table[p(n)], s = *scale (rounded to bf16 when
//     round_scale), p(n) = pos0[n / T] + n % T (pos0 null: n % T); table [P, C] covers every p
//   sinusoid_position_backward: *dscale += sum_n dout[n] . table[p(n)], in row order in double
//     (the same bits for any thread count)
void position_embedding_forward_bf16(float* out, const float* wpe, int N, int T, int C);
void sinusoid_position_forward(float* out, const float* table, const float* scale,
                               const std::int32_t* pos0, int N, int T, int C, bool round_scale);
void sinusoid_position_backward(float* dscale, const float* dout, const float* table,
                                const std::int32_t* pos0, int N, int T, int C);

// The sum of x[0, n) in double, in index order (the same bits for any thread count).
double sum_f64(const float* x, std::size_t n);
// The sum of |x| over `rows` rows of `width` floats at row stride ld (the coordinate check's
// mean absolute value), in double.
double abs_sum_rows(const float* x, int rows, int width, int ld);

// The coordinate check's score statistic: the sum over b, h and every (i, j) pair (future ones
// too: the seed measures before the causal mask) of |scale q_i . k_j|, q and k from qkv laid out
// as attention_forward reads it.
double attention_score_abs_sum(const float* qkv, int B, int T, int H, int Hkv, int D, float scale);

// One query per row over a KV cache. q[M, ldq] (head h at columns h*D..h*D+D); caches
// [S, Hkv, Tmax, D], row m attends to positions 0..T-1 of sequence seq[m] (null: m); query head
// h reads key/value head h / (H / Hkv). out[M, H D] = softmax(scale q K^T - slope[h] *
// (T - 1 - j)) V per head (no ALiBi term when alibi_slopes is null; scale 0 = 1/sqrt(D)), plus
// dist's bias of distance T - 1 - j when dist is non-null (softmax only).
void attention_decode(float* out, const float* q, int ldq, const float* k_cache,
                      const float* v_cache, const int32_t* seq, int M, int T, int Tmax, int H,
                      int Hkv, int D, const float* alibi_slopes, float scale = 0.f,
                      const AttnActParams* act = nullptr,  // null: softmax
                      const DistanceBias* dist = nullptr);

// attention_decode over a paged cache: pools [num_blocks, Hkv, block, D] hold `block` positions
// per block; row m's positions 0..lens[m]-1 are at offset j % block of block tables[m][j /
// block], and its query sits at position lens[m] - 1. A row's result depends only on its own
// query and positions (bitwise), whatever the other rows.
void attention_paged(float* out, const float* q, int ldq, const float* k_pool, const float* v_pool,
                     const std::int32_t* const* tables, const std::int32_t* lens, int M, int block,
                     int H, int Hkv, int D, const float* alibi_slopes, float scale = 0.f,
                     const AttnActParams* act = nullptr, const DistanceBias* dist = nullptr);

// T5's bias table per distance (cpu/distance_bias.cpp; ops/distance_bias.h): dist[h, d] =
// table[h, buckets[d]] for d < L; grad_table[h, b] += grad[h, d] over d < L with buckets[d] = b,
// in increasing d. table, grad_table [H, NB]; dist, grad [H, L]; buckets [L] in 0..NB-1.
void distance_bias_expand(float* dist, const float* table, const std::int32_t* buckets, int H,
                          int L, int NB);
void distance_bias_fold(float* grad_table, const float* grad, const std::int32_t* buckets, int H,
                        int L, int NB);

// --- Transformer-VQ attention (seed 001): the algorithm, its shapes and the state a sequence
// carries are described with VqAttnShape in ops/op_params.h ---
// out[B, T, dv] and lse[B, T] (each query's log-sum-exp, for the backward) for queries q (rows
// of stride ldq), codes z[B, T] and values v (rows of stride ldv). codebook [S, dk], rel
// [L + 1, dk] (the position vector of each distance), u, vb [dk]. state: null = every sequence
// starts empty at position 0; else B states, read at the start and advanced past the call.
void vq_attention_forward(float* out, float* lse, const float* q, int ldq, const std::int32_t* z,
                          const float* v, int ldv, const float* codebook, const float* rel,
                          const float* u, const float* vb, int B, int T, VqAttnShape shape,
                          VqAttnState* state);
// Gradients (for the same inputs and the state the forward started from, null = empty): dq, dk
// (w.r.t. the key vectors, rows of stride ldq), dv (stride ldv) overwrite; du, dvb [dk] and
// drel [L + 1, dk] accumulate (+=). The keys and values a state carries get no gradient (the
// seed's truncated backpropagation); codebook and counts never do.
void vq_attention_backward(float* dq, float* dk, float* dv, float* du, float* dvb, float* drel,
                           const float* dout, const float* out, const float* lse, const float* q,
                           int ldq, const std::int32_t* z, const float* v, int ldv,
                           const float* codebook, const float* rel, const float* u, const float* vb,
                           int B, int T, VqAttnShape shape, const VqAttnState* state);
// Nearest codeword of each key (squared distance, lowest index on ties): z[N], err[N] = the
// squared distance (the commitment loss's term), k rows of stride ldk.
void vq_quantize(std::int32_t* z, float* err, const float* k, int ldk, const float* codebook, int N,
                 int S, int dk);

// sum of squares of x[0..n): float sums over blocks of 1024, block sums in double;
// deterministic for a fixed thread count.
double sum_squares(const float* x, std::size_t n);
// x *= s
void scale(float* x, float s, std::size_t n);
// x = min(max(x, -limit), limit): element-wise gradient clipping
void clamp(float* x, float limit, std::size_t n);

// One AdamW step on a contiguous range. Decoupled weight decay (PyTorch AdamW):
// p -= lr*wd*p; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// with g = grad_scale * g[i] (norm clipping's factor, folded in: bitwise what scaling the
// gradients first gives, without the pass over them).
void adamw(float* p, const float* g, float* m, float* v, std::size_t n, float lr, float beta1,
           float beta2, float eps, float weight_decay, long step, float grad_scale = 1.f);

// One Lion step (Chen et al. 2023) on a contiguous range, decoupled weight decay:
// u = sign(b1 m + (1-b1) g);  m = b2 m + (1-b2) g;  p -= lr * (u + wd * p)
// with g = grad_scale * g[i], as adamw.
void lion(float* p, const float* g, float* m, std::size_t n, float lr, float beta1, float beta2,
          float weight_decay, float grad_scale = 1.f);

// Adafactor's passes (cpu/adafactor.cpp has the whole algorithm; the optimizer adds the sums
// over the ranks between them), over MatrixRuns (ops/op_params.h).
// row_sums[i] += sum_j (g_ij^2 + eps), col_sums[j] += sum_i (g_ij^2 + eps) over the run, indexed
// by whole row and column (float squares, double sums).
void adafactor_factored_sums(const float* g, MatrixRun run, float eps, double* row_sums,
                             double* col_sums);
// The sum over the run of u_ij^2, u_ij = g_ij * row_scale[i] * col_scale[j].
double adafactor_factored_sumsq(const float* g, MatrixRun run, const float* row_scale,
                                const float* col_scale);
// p_ij = p_ij * decay - step * u_ij over the run.
void adafactor_factored_apply(float* p, const float* g, MatrixRun run, const float* row_scale,
                              const float* col_scale, float step, float decay);
// A full second moment: v = beta v + (1 - beta) (g^2 + eps); returns sum u^2, u = g / sqrt(v).
double adafactor_moment(float* v, const float* g, std::size_t n, float beta, float eps);
// One factored R x C tensor's statistics and the update's factors, stats, scales, means [R + C]:
// stats = beta stats + (1 - beta) means (means: the row sums / C, then the column sums / R, as
// floats); scales = 1 / sqrt(stats / mean), the mean (a double sum in index order) taken along
// the shorter dim (the rows when square), 1 along the other.
void adafactor_factored_scales(float* stats, float* scales, const float* means, std::int64_t R,
                               std::int64_t C, float beta);
// p = p * decay - step * g / sqrt(v)
void adafactor_apply(float* p, const float* g, const float* v, std::size_t n, float step,
                     float decay);

// Peak fp32 GFLOP/s of this machine on `threads` threads, measured by a short FMA loop.
double measure_peak_gflops(int threads, double seconds = 0.2);
// Peak bf16 GFLOP/s with the AVX512-BF16 dot product (vdpbf16ps; 0 where native_bf16() is false).
double measure_peak_bf16_gflops(int threads, double seconds = 0.2);

}  // namespace meshlm::kernels

// Ops for a vocabulary split across model ranks: each rank holds rows [v0, v0 + Vl) of the
// token embedding (tied to the head) and only its columns of the logits, (N, Vl).
// The caller does the all-reduces between the cross-entropy phases (kernels never communicate):
//   ce_row_max     -> all-reduce max of row_max[N]
//   ce_row_sums    -> all-reduce sum of stats[2N]
//   ce_finish      -> losses and, in place, scale * (softmax - onehot) over the local logits
// so no rank ever holds the full (N, V) logits.
#pragma once

#include <cstdint>

namespace meshlm::kernels {

// out[n] = wte[tokens[n] - v0] for tokens in [v0, v0 + Vl), else 0. wte is (Vl, C).
void embedding_forward_vocab_range(float* out, const int32_t* tokens, const float* wte, int v0,
                                   int Vl, int N, int C);
// dwte[tokens[n] - v0] += dout[n] for tokens in range: each element summed by one thread in
// token order (parallel over channel slices), so deterministic without atomics.
void embedding_backward_vocab_range(float* dwte, const float* dout, const int32_t* tokens, int v0,
                                    int Vl, int N, int C);

// out[n] += wpe[n % T]; dwpe[n % T] += dout[n] (the position half of the embedding ops).
void position_embedding_forward(float* out, const float* wpe, int N, int T, int C);
void position_embedding_backward(float* dwpe, const float* dout, int N, int T, int C);

// row_max[n] = max over the local logits of row n (row stride ldv); 0 for rows with target < 0.
void ce_row_max(float* row_max, const float* logits, const int32_t* targets, int N, int Vl,
                int ldv);
// With the global row_max: stats[2n] = sum_v exp(logits[n,v] - row_max[n]) and
// stats[2n+1] = logits[n, targets[n] - v0] when the target is local, else 0. When `store`, the
// exps overwrite the logits (ce_finish turns them into the gradient).
void ce_row_sums(float* stats, float* logits, const int32_t* targets, const float* row_max, int v0,
                 int N, int Vl, int ldv, bool store);
// With the global stats: losses[n] = log(sum) + max - x_target (0 where target < 0); if
// dlogits_scale != 0, logits (holding the stored exps) become dlogits_scale * (softmax -
// onehot + 2 z_loss lse softmax) (softmax_cross_entropy's z-loss), zero on ignored rows, and
// the padding columns Vl..ldv-1 become 0.
void ce_finish(float* logits, float* losses, const int32_t* targets, const float* row_max,
               const float* stats, int v0, int N, int Vl, int ldv, float dlogits_scale,
               float z_loss = 0.f);

}  // namespace meshlm::kernels

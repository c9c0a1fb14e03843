// The parameter types the ops and both backends share (activations, attention dropout and
// nonlinearities, Transformer-VQ's shapes and carried state, Adafactor's runs): the op interface's
// vocabulary, so that the layers name them without including a backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace meshlm::kernels {

// Element-wise activations. gelu_tanh is GPT-2's gelu_new (tanh approximation), gelu the exact
// erf form, relu max(x, 0), sqrelu relu(x)^2 (Primer), silu x * sigmoid(x).
enum class Act { gelu_tanh, gelu, relu, sqrelu, silu };

// Dropout of attention probabilities (the counter-based mask of `dropout` below, one draw per
// (global row, global head, query, key)): P[i, j] is kept with probability 1 - rate and scaled
// by 1 / (1 - rate). row0 = index of row b = 0 in the global batch, head0 = global index of this
// call's head 0 (tensor parallelism splits heads). The draw of (row, head, query i, key j) is
// draw ((row * n_head + head) * T + i) * T + j of the stream, numbered as in `dropout`.
struct AttnDropout {
    float rate = 0.f;
    std::uint64_t seed = 0, stream = 0;
    std::int64_t row0 = 0;
    int head0 = 0, n_head = 0;  // n_head: heads of the whole model (the mask's counter space)
};

// A learned bias by query-key distance (model.position t5_bias, seed 003's T5 buckets resolved
// per distance): score (i, j) of head h gains bias[h * ld + (i - j)]; attention_forward and
// _backward need ld >= T, the decoding kernels read a distance d >= ld at ld - 1 (T5's last
// bucket holds every distance from max_distance on). A backward adds to grad[h * ld + d] (when
// non-null) the sum of the score gradients dS over every (b, i, j) with i - j = d, in a fixed
// order.
struct DistanceBias {
    const float* bias = nullptr;
    float* grad = nullptr;
    int ld = 0;
};

// Attention nonlinearities besides softmax (model.attn_act, seed 002): a = sqrelu relu(s)^2 or
// elu elu(s) + 1 of the scores s (masked positions 0); p = a / t_norm (the model's context
// length), or for norm_* p = a / (eps + the row's sum of a).
enum class AttnAct { softmax, sqrelu, elu, norm_sqrelu, norm_elu };
struct AttnActParams {
    AttnAct act = AttnAct::softmax;
    float t_norm = 1.f, eps = 1e-5f;
};

// --- Transformer-VQ attention (seed 001) ---
// Single-head causal attention over vector-quantized keys in linear time. Key t is the codeword
// codebook[z[t]]. Tokens fall in blocks of L by absolute position; a query in block r attends
// exactly to the keys of blocks r - 1 and r up to itself (the window), and to every older key
// through the compressed cache: per code s, the count N_s of older keys assigned to s and the
// mean U_s of their values, scored (q + u).codebook_s + log N_s. Scores in the window:
//   s(i, j) = (q_i + u).k_j + [i - j <= L] (q_i + vb).rel[i - j]      (Transformer-XL biases)
// with one max-subtracted softmax over the window and the cache: exactly softmax attention over
// all keys with these scores (sum_j exp(q.k_j) v_j over the keys of code s = exp(q.c_s) N_s U_s).
// How the cache each block reads is made from the blocks before it (seed 001's reduction_type):
// serial -- folded in one block at a time as the blocks go by (a running mean); matmul -- from
// every block's own counts and means at once: N_r is their running sum and U_r = sum over the
// blocks g folded before r of (n_g / N_r) U_g, one (blocks x blocks) GEMM per code. The same
// values up to rounding; matmul computes every block's cache up front (memory: blocks x S x dv
// per sequence) so the blocks never wait for each other.
enum class VqReduction { serial, matmul };
struct VqAttnShape {
    int L, S, dk, dv;  // block length, codes, key width, value width
    VqReduction reduction = VqReduction::serial;
};
// What a sequence carries from one call to the next: constant size (at most 2L - 1 window
// tokens, S counts and means), however long the text.
struct VqAttnState {
    std::int64_t pos = 0;            // tokens before the next call
    std::vector<std::int32_t> z;     // codes of the window [window_start(pos), pos)
    std::vector<float> v;            // its values, rows of dv
    std::vector<float> count, mean;  // the cache: S, and S x dv (empty = all zero)
    // Back to an empty sequence at position 0, keeping the vectors' capacity (no allocation).
    void clear() { pos = 0, z.clear(), v.clear(), count.clear(), mean.clear(); }
};
// First position of the window of the token at `pos`: the start of the previous block.
inline std::int64_t vq_window_start(std::int64_t pos, int L) {
    return pos / L >= 1 ? (pos / L - 1) * L : 0;
}

// Adafactor's unit of work: n elements of a row-major block [*, width] of a whole tensor from
// the block's element `first`; the block's (0, 0) is the tensor's (row0, col0).
struct MatrixRun {
    std::size_t n, first;
    std::int64_t width, row0, col0;
};

}  // namespace meshlm::kernels

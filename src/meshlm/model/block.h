// One transformer block, composed once from the layers: training, activation recomputation, the
// KV-cache and paged decoders and Transformer-VQ decoding all run this sequence (N = B*T rows):
//   sequential   ln1 = norm1(x);  mid = close(attn(ln1), bp, x)
//                ln2 = norm2(mid); out = close(mlp(ln2), bo, mid)
//   parallel     ln1 = norm1(x);  out = close(attn(ln1) + mlp(ln1), bp + bo, x)   (GPT-J)
//   attention only                out = close(attn(ln1), bp, x)
//   attn(h) = proj(core(rotate(qkv(h)))), or the Transformer-VQ sublayer (vq_attention.h)
//   close(b, b1, b2, r) = drop(reduce(b) + b1 + b2) + r
// What differs between passes is a BlockPass: the attention core (the strategy: causal full
// attention over the rows, or a decoder's KV cache / paged cache), the rows' positions, the
// Transformer-VQ states, how a branch closes (training reduces over the model ranks and drops
// out) and the coordinate check's records. How the linears multiply is the layers' own choice
// (Attention::linear, Mlp::linear): the training GEMMs, or the decoders' skinny kernel.
//
// Backward, from dres = dL/d(out) (dres += dL/dx on return):
//   sequential                                parallel
//   g = drop(dres); dbo += sum g              g = drop(dres); dbp, dbo += sum g
//   dln = reduce(mlp^T(g)); dres += norm2^T   dln = reduce(mlp^T(g) + attn^T(g))
//   g = drop(dres); dbp += sum g              dres += norm1^T(dln)
//   dln = reduce(attn^T(g)); dres += norm1^T
#pragma once

#include <cstddef>
#include <cstdint>

#include "meshlm/core/tensor.h"
#include "meshlm/kernels/ops/op_params.h"
#include "meshlm/kernels/ops/vq_attention.h"
#include "meshlm/model/attention.h"
#include "meshlm/model/mlp.h"
#include "meshlm/model/model_config.h"
#include "meshlm/model/norm.h"
#include "meshlm/model/tensors.h"
#include "meshlm/model/vq_attention.h"

namespace meshlm {

// The block's dropout sites (the embedding's is the model's): each has its own mask stream.
enum DropSite : int { kDropEmbd = 0, kDropAttnResid = 1, kDropMlpResid = 2, kDropAttnProbs = 3 };

// One block's activations over N rows; a pass leaves unused ones null.
struct BlockActs {
    float *ln1, *mean1, *rstd1;  // (N,C) (N) (N)
    float* qkv;                  // (N, qkv width), q and k rotated (and normalized)
    float* qk_rstd;              // (N, Hl + Kl) with qk_norm
    float *y, *lse;              // (N, Hl D) (Hl N)
    float* mid;                  // (N,C) residual after attention (sequential)
    float *ln2, *mean2, *rstd2;  // sequential
    float *h, *a;                // MLP: (N, h width) (N, Fl)
    float* out;                  // (N,C) residual after the block
    // bf16 precision: ln1, ln2 and a are kept here in bf16 (the linears' inputs), their
    // fp32 pointers are scratch shared by every block. Null with fp32.
    std::uint16_t *ln1_16 = nullptr, *ln2_16 = nullptr, *a16 = nullptr;
    // model.attention vq: what its sublayer keeps (core: o, lse; rest: projections, codes)
    float *vq_core = nullptr, *vq_rest = nullptr;
    VqAttention::Acts vq{};
};

// The backward's scratch, shared by every block (N rows): dres is dL/d(block output) on entry
// and dL/d(block input) on return; the rest are the layers' scratch.
struct BlockGrads {
    float *dres, *dln, *dy, *dqkv, *da, *dh;  // (N,C) (N,C) (N, Hl D) (N, qkv) (N, Fl) (N, h)
};

// One pass's choices for the block. The defaults are an inference pass on one rank.
class BlockPass {
  public:
    virtual ~BlockPass() = default;
    // The rows' positions where rotary reads them (null: row n sits at n % T).
    virtual const std::int32_t* positions() const { return nullptr; }
    // The attention strategy: y [N, Hl D] (and lse [B, Hl, T] when non-null) of block `layer`
    // from the rows' rotated q | k | v [N, qkv width], B sequences of T rows.
    virtual void attend(int layer, float* y, float* lse, const float* qkv, int B, int T) = 0;
    // model.attention vq: the B states block `layer`'s rows continue and advance (null: from
    // position 0, nothing carried).
    virtual kernels::VqAttnState* vq_states(int layer) { return nullptr; }
    // Forward only: the Transformer-VQ sublayer's quantization of the rows (err: its mean
    // squared error).
    virtual void vq_quantized(const VqAttention::Acts& acts, float err, int N) {}
    // True when the out-projections add their biases (a fused kernel): close() gets none then.
    virtual bool linear_biases() const { return false; }
    // out [N, C] = reduce(out) + b1 + b2 (each may be empty), dropped out, + residual; `stat`:
    // the coordinate-check site of the reduced branch (-1: none).
    virtual void close(const Tensor& out, const Tensor& b1, const Tensor& b2,
                       const Tensor& residual, int layer, int site, int stat);
    // The coordinate check: rows x width of x (row stride ld) at block `layer`'s `site`.
    virtual void record(int layer, int site, const float* x, int rows, int width, int ld) {}

    // Backward only (a training pass overrides them).
    // The gradient entering a branch: dres masked like the branch's dropout.
    virtual const float* branch_grad(const float* dres, int N, int layer, int site);
    // The attention probabilities' dropout of block `layer` (null: none).
    virtual const kernels::AttnDropout* attn_dropout(int layer) { return nullptr; }
    // Sums x [n] over the model ranks.
    virtual void reduce(float* x, std::size_t n) {}
    // model.attention vq: the states block `layer`'s rows started the forward from (null:
    // none); their keys and values take no gradient.
    virtual const kernels::VqAttnState* vq_start(int layer) { return nullptr; }
    // model.attention vq: the commitment loss's per-token scale and the model-parallel group.
    virtual float loss_scale() const { return 0.f; }
    virtual ModelComm* model_comm() { return nullptr; }
};

class Block {
  public:
    // The layers of this model rank (`model` ranks, this one `rank`); every block index runs
    // them with its own weights.
    Block(const ModelConfig& cfg, int model, int rank);
    // Moves the layers' views (and the attention's tables) to `d`.
    void place(Device d);
    Device device() const { return norm.device; }

    Norm norm;
    Attention attn;
    Mlp mlp;
    VqAttention vq;
    const bool vq_on, parallel, has_mlp;
    // model.attention vq: the active block's codebook and positions, and the sublayer's scratch
    // (memory of the owner's activation plan).
    VqAttention::Derived vq_derived{};
    float* vq_scratch = nullptr;

    // Block `layer` with weights w on x [N, C] into a (a.out the result).
    void forward(BlockPass& pass, int layer, const BlockTensors& w, BlockActs& a, const float* x,
                 int B, int T);
    // Reruns what the backward reads and recomputation dropped: the norms, projections and
    // the MLP's up half, and with `core` the attention core too (Recompute::block).
    void recompute(BlockPass& pass, int layer, const BlockTensors& w, BlockActs& a, const float* x,
                   int B, int T, bool core);
    // Accumulates block `layer`'s parameter gradients into g and turns s.dres from dL/d(out)
    // into dL/dx, for the forward that left a.
    void backward(BlockPass& pass, int layer, const BlockTensors& w, BlockTensors& g,
                  const BlockActs& a, const BlockGrads& s, const float* x, int B, int T);

  private:
    // The attention sublayer on a.ln1: its (unreduced) branch into `branch`.
    void attention(BlockPass& pass, int layer, const BlockTensors& w, BlockActs& a, float* branch,
                   int B, int T);
    // A sequential block's second half: out = close(mlp(norm2(mid)), bo, mid).
    void mlp_branch(BlockPass& pass, int layer, const BlockTensors& w, BlockActs& a, int N);
    // ln = norm(x), kept in bf16 too when ln16 is non-null.
    void normalize(float* ln, std::uint16_t* ln16, float* mean, float* rstd, const float* x,
                   const float* gain, const float* bias, int N) const;
    void close(BlockPass& pass, float* out, const float* b1, const float* b2, const float* residual,
               int N, int layer, int site, int stat) const;
    void bias_grad(float* db, const float* dy, int N) const;  // db [C] += sum of dy's rows

    int C;
};

}  // namespace meshlm

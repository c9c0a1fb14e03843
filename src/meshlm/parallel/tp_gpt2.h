// TensorParallelGPT2: the GPT-2 of model/gpt2.h split Megatron-style over a model-parallel
// communicator of M ranks (layout in parallel/tp_layout.h). Per block:
//   ln1 -> c_attn (column-parallel: this rank's heads) -> attention on H/M heads
//       -> attn.c_proj (row-parallel: partial sums) -> all-reduce -> + bias + residual
//   ln2 -> mlp.c_fc (column-parallel, F/M) -> GELU -> mlp.c_proj (row-parallel) -> all-reduce
// In Megatron's terms each column-parallel layer is preceded by f (identity forward, all-reduce
// of the input gradient backward) and each row-parallel one followed by g (all-reduce forward,
// identity backward): 2 all-reduces of (N, C) per block forward and 2 backward.
// Embedding and head are vocabulary-parallel: each rank looks up its vocabulary range (zeros
// elsewhere) and the rows are all-reduced; the head computes only this rank's logits (N, V/M),
// and cross-entropy all-reduces the row max, the sum of exps and the target logit, so no rank
// holds the full (N, V) logits.
//
// Everything outside the column/row-parallel pairs (the residual stream, LayerNorm inputs,
// dL/d(residual)) is replicated: each rank computes it from all-reduced values, so the
// gradients of the replicated parameters (wpe, LayerNorms, row-parallel biases) come out
// bit-identical on every model rank by construction and need no all-reduce of their own. Sharded
// gradients are this rank's slice of the full gradient. Data parallelism composes outside:
// all-reduce (or reduce-scatter, ZeRO) the local gradient buffer over the data axis.
#pragma once

#include <cstdint>
#include <vector>

#include "meshlm/core/buffer.h"
#include "meshlm/model/gpt2.h"
#include "meshlm/model/model_config.h"
#include "meshlm/model/param_layout.h"
#include "meshlm/model/param_stream.h"
#include "meshlm/parallel/comm.h"

namespace meshlm {

// Bytes one forward (with targets) + backward over (B, T) sends from model rank `rank` of
// `model`, by the convention of parallel/traffic.h: all-reduces of (N, C) for the embedding,
// 2 per block forward and 2 backward, the head's input gradient, and the cross-entropy's
// row max (N) and statistics (2N). A trainer can log it against Comm::bytes_sent().
std::uint64_t tp_step_bytes(const ModelConfig& cfg, int model, int rank, int B, int T);

class TensorParallelGPT2 {
  public:
    // `comm` is the model-parallel group (DeviceMesh::model_comm()); it must outlive the model.
    // Throws InvalidInput when heads, MLP width or vocabulary do not divide by comm.size().
    TensorParallelGPT2(const ModelConfig& cfg, Comm& comm, int max_batch, int max_seq);

    const ModelConfig& config() const { return cfg_; }
    const ParamLayout& layout() const { return layout_; }  // this rank's shard (tp_local_layout)
    int vocab_begin() const { return v0_; }                // first vocabulary row of the shard
    std::size_t activation_bytes() const { return acts_.capacity() * sizeof(float); }

    // GPT2::forward over the local shard: tokens and targets (B, T) are the same on every model
    // rank; returns the same mean cross-entropy on every rank. Collective over the group.
    float forward(const float* params, const std::int32_t* tokens, const std::int32_t* targets,
                  int B, int T, float grad_scale = 0.f);
    // Accumulates (+=) this rank's local gradients for the last forward. Collective.
    void backward(const float* params, float* grads);
    // As GPT2::set_param_stream: parameters and gradients of the local shard unit by unit.
    void set_param_stream(ParamStream* stream) { views_.set_stream(stream); }

    const float* logits() const { return logits_; }  // (B*T, V/M): this rank's columns
    const float* losses() const { return losses_; }  // (B*T) per-token losses

  private:
    struct BlockActs {
        float *ln1, *ln1_mean, *ln1_rstd;  // (N,C) (N) (N)
        float* qkv;                        // (N,3Cl) local q | k | v
        float *atty, *lse;                 // (N,Cl) (B,Hl,T)
        float* res_mid;                    // (N,C) residual after attention
        float *ln2, *ln2_mean, *ln2_rstd;  // (N,C) (N) (N)
        float *fch, *fch_gelu;             // (N,Fl)
        float* res_out;                    // (N,C)
    };
    // out = all_reduce(out) + bias + residual: the g operator closing a row-parallel layer.
    void close_row_parallel(float* out, const float* bias, const float* residual, int N);

    ModelConfig cfg_;
    Comm& comm_;
    int M_, Cl_, Hl_, Fl_, Vl_, v0_;
    ParamLayout layout_;
    int max_batch_, max_seq_;
    Arena acts_;
    float* embed_;  // (N,C)
    std::vector<BlockActs> blocks_;
    float *lnf_, *lnf_mean_, *lnf_rstd_;  // (N,C) (N) (N)
    float* logits_;                       // (N,Vl), reused in place for dlogits
    float* losses_;                       // (N)
    float *row_max_, *ce_stats_;          // (N) (2N)
    float *dres_, *dln_, *datty_, *dqkv_, *dfch_, *dfch_gelu_;
    WeightViews views_;
    const std::int32_t* tokens_ = nullptr;
    int B_ = 0, T_ = 0;
    bool grad_ready_ = false;
};

}  // namespace meshlm

// The transformer: every model family is one of these, composed from a ModelConfig.
//   x = dropout(embedding(tokens))
//   per block, sequential:  x = x + dropout(attn(norm1(x)));  x = x + dropout(mlp(norm2(x)))
//              parallel:    h = norm1(x);  x = x + dropout(attn(h) + mlp(h))   (GPT-J)
//   logits = head(norm_f(x)); loss = mean cross-entropy over the scored targets
// The same code runs on one process or as model rank `rank` of M tensor-parallel ranks
// (Megatron-style: attention heads, key/value heads and the MLP width split column-parallel
// in, row-parallel out; embedding and head split by vocabulary): it differs only in the widths
// and in calls to the ModelComm, whose sums are no-ops on one rank. Everything outside the
// column/row pairs -- the residual stream, the norms, their inputs and dL/d(residual) -- is
// replicated: each rank computes it from reduced values, so the gradients of replicated
// parameters come out bit-identical on every model rank and need no reduction of their own.
//
// The model owns only its activations, planned for at most (max_batch, max_seq) when it is
// built; parameters and gradients are flat buffers laid out by layout() (transformer_layout)
// handed in by the caller, or arrive a unit at a time from a ParamStream, so sharding strategies
// can hand it gathered views.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "meshlm/core/buffer.h"
#include "meshlm/core/model_comm.h"
#include "meshlm/core/param_layout.h"
#include "meshlm/core/param_stream.h"
#include "meshlm/kernels/device_buffer.h"
#include "meshlm/model/attention.h"
#include "meshlm/model/block.h"
#include "meshlm/model/coord_stats.h"
#include "meshlm/model/embedding.h"
#include "meshlm/model/head.h"
#include "meshlm/model/mlp.h"
#include "meshlm/model/model_config.h"
#include "meshlm/model/norm.h"
#include "meshlm/model/t5_bias.h"
#include "meshlm/model/tensors.h"
#include "meshlm/model/vq_attention.h"

namespace meshlm {

// Activation recomputation (train.recompute): what the forward keeps for the backward.
//   none       every activation of every block
//   attention  per block, only the attention core's output and log-sum-exp (what only the
//              quadratic attention pass can rebuild) and the block's output; the norms, the
//              projections and the MLP's up half are rerun in the backward, into one shared set
//   block      per block, only its output; the whole block is rerun in the backward
// The rerun uses the same kernels, dropout keys and thread count, so losses and weights are
// bitwise those of `none`.
enum class Recompute { none, attention, block };
Recompute parse_recompute(const std::string& name);  // none | attention | block
const char* recompute_name(Recompute r);

// Floats of activations a model rank plans for a (B, T) batch; info reports it without building.
// With bf16 precision it includes the GEMMs' bf16 operand scratch (linear.h).
std::size_t transformer_activation_floats(const ModelConfig& cfg, int B, int T, int model = 1,
                                          Recompute recompute = Recompute::none,
                                          Precision precision = Precision::fp32);

// Floats of the Transformer-VQ attention state (kernels::VqAttnState) that `rows` rows carry
// between model.vq.update_len's chunks, every layer, on one of `model` ranks (the values are
// split): at a chunk boundary, the previous block's codes and values and the compressed
// cache's counts and means.
std::size_t vq_carried_state_floats(const ModelConfig& cfg, std::size_t rows, int model = 1);

// Why a model of `cfg` cannot run on `device` yet ("" when it can): what still runs on the host
// (T5's distance bias, scaled sinusoids, attention-probability dropout). Transformer-VQ runs
// there, its carried states (kernels::VqAttnState) host structs the op copies over and back.
std::string model_device_gap(const ModelConfig& cfg, Device device);
// The same for decoding (sample, eval, serve): also Transformer-VQ, whose Decoder steps a host
// Transformer with host states.
std::string decode_device_gap(const ModelConfig& cfg, Device device);

class Transformer {
  public:
    // `mp` (outliving the model) is the model-parallel group; nullptr = one rank.
    // `device`: where the activations live and the ops run; the parameters and gradients
    // handed to forward / backward must live there too. Tokens and targets stay host arrays
    // (copied over per call); a CUDA model refuses what runs on the host only (cuda_gap()).
    Transformer(const ModelConfig& cfg, int max_batch, int max_seq, ModelComm* mp = nullptr,
                Recompute recompute = Recompute::none, Precision precision = Precision::fp32,
                Device device = Device::cpu);
    // The layers point at bf16_: the model stays where it was built.
    Transformer(const Transformer&) = delete;
    Transformer& operator=(const Transformer&) = delete;

    const ModelConfig& config() const { return cfg_; }
    const ParamLayout& layout() const { return layout_; }  // this rank's (transformer_layout)
    int model_ranks() const { return mp_->size(); }
    Precision precision() const { return precision_; }
    int vocab_begin() const { return head_.v0; }      // first vocabulary column of logits()
    int vocab_local() const { return head_.Vvalid; }  // real (unpadded) columns of logits()
    int logits_stride() const { return head_.Vl; }
    std::size_t activation_bytes() const { return acts_.capacity() * sizeof(float); }

    // Dropout masks are keyed by (seed, step, layer, global row): `row0` is the index of this
    // call's first row in the step's global batch. Only training forwards (grad_scale != 0) drop.
    void set_dropout_key(std::uint64_t seed, std::int64_t step, std::int64_t row0) {
        drop_seed_ = seed, drop_step_ = step, drop_row0_ = row0;
    }

    // Runs the model on tokens (B, T), B*T <= max_batch*max_seq and T <= max_seq. With targets,
    // returns the mean cross-entropy over the rows whose target is >= 0, and when grad_scale !=
    // 0 leaves scale * dloss/dlogits in the logits buffer for backward(). Without targets,
    // returns 0 and leaves the logits. Collective over the model ranks.
    float forward(const float* params, const std::int32_t* tokens, const std::int32_t* targets,
                  int B, int T, float grad_scale = 0.f);
    // Accumulates gradients (+=) into grads for the last forward (which had grad_scale != 0).
    void backward(const float* params, float* grads);

    // With a stream (nullptr = none), forward and backward take parameters and put gradients a
    // unit at a time through it (FSDP) and ignore their params / grads arguments.
    void set_param_stream(ParamStream* stream) { views_.set_stream(stream); }
    // Called by backward() as soon as block `layer`'s parameter gradients are complete for this
    // call (layers L-1 down to 0), so data parallelism can start reducing them while earlier
    // blocks are still being differentiated. The embeddings and the head finish only at the end.
    void set_block_backward_hook(std::function<void(int layer)> hook) {
        block_hook_ = std::move(hook);
    }

    // model.attention vq: forwards continue B sequences from their states and advance them --
    // states[l * stride + b] for block l and row b (outliving the calls; nullptr = every row
    // starts at position 0). Positions are then the states', not 0..T-1. A training forward
    // keeps a copy of the states it started from for its backward: the carried keys and values
    // take no gradient (truncated backpropagation, model.vq.update_len).
    void set_vq_states(kernels::VqAttnState* states, int stride) {
        vq_states_ = states, vq_state_stride_ = stride;
    }

    // With stats (outliving the calls; nullptr = off), training forwards add the coordinate
    // check's sums at every site (coord_stats.h) into it.
    void set_coord_stats(CoordStats* stats) { coord_ = stats; }
    // With sums (2 * n_layer doubles, outliving the calls; nullptr = off), training forwards add
    // the sum of squares of the residual stream after each block into sums[l] and its element
    // count into sums[n_layer + l] (log.diag_interval's activation RMS).
    void set_residual_sums(std::vector<double>* sums) { resid_sums_ = sums; }

    Device device() const { return device_; }
    // (B*T, logits_stride()) after forward, on device().
    const float* logits() const { return logits_; }
    // Block `layer`'s q | k | v rows of the last forward, q and k rotated (the decoder's cache).
    // Only without recomputation: with it, the blocks share one q | k | v buffer.
    const float* block_qkv(int layer) const;
    // (B*T) per-token losses of the last forward with targets, in host memory.
    const float* losses() const { return device_ == Device::cpu ? losses_ : host_losses_.data(); }
    // model.attention vq, the last training forward's quantization, averaged over the layers:
    // the squared error per token (the commitment loss without c_beta), the share of the codes
    // used and the entropy (nats) of the codes' use. Zero otherwise.
    struct VqStats {
        float commit = 0, usage = 0, entropy = 0;
    };
    const VqStats& vq_stats() const { return vq_stats_; }

  private:
    class BlockRun;  // the blocks' pass (transformer.cpp)
    // The activation plan (transformer_plan.cpp): P counts or takes each buffer in turn.
    template <typename P>
    void plan(P& p);
    template <typename P>
    void plan_blocks(P& p);
    kernels::AttnDropout attn_dropout(int layer) const;
    // The embedding's dropout (model.dropout_embd) on x [N, C], or on its gradient.
    void embed_dropout(float* x, int N) const;
    // Block l's parameters; with bf16 its vectors (norm gains, biases) are bf16 copies.
    const BlockTensors& block_weights(int l);
    // The weights outside the blocks the forward and backward read: with bf16, ln_f and the
    // head bias as bf16 copies (the embedding layer rounds its own; the head GEMM its operand).
    const ModelTensors& root_weights();
    // Copies N host ids into `dst` (device memory) and returns them there.
    const std::int32_t* device_ids(kernels::DeviceBuffer& dst, const std::int32_t* ids,
                                   int N) const;
    void add_vq_stats(const VqAttention::Acts& a, float err, int N);
    // The coordinate check's attention-score records of block l (q | k | v rows of B x T).
    void record_scores(int l, const float* qkv, int B, int T);
    void add_residual_sums(int layer, const float* x, int N);  // x: (N, C)

    ModelConfig cfg_;
    Device device_ = Device::cpu;  // where the activations live; every layer's device
    SingleRank single_;
    ModelComm* mp_;
    ParamLayout layout_;
    Embedding embed_layer_;
    Block block_;  // the layers every block runs (its VQ scratch in acts_)
    bool vq_on_;
    float grad_scale_ = 0.f;  // the last forward's: the commitment loss's per-token scale
    VqStats vq_stats_;
    std::vector<int> vq_used_;            // add_vq_stats' per-code counts
    std::vector<std::int32_t> vq_codes_;  // ... and off the CPU its host copy of the codes
    kernels::VqAttnState* vq_states_ = nullptr;
    std::vector<kernels::VqAttnState> vq_start_;  // what the last training forward started from
    bool vq_carried_ = false;                     // ... when it had states (vq_start_ valid)
    std::vector<std::int64_t> row_pos_;           // each row's first position (carried states)
    const std::int64_t* pos0_ = nullptr;          // row_pos_ for the last forward, or null
    std::vector<kernels::VqAttnState> vq_rerun_;  // block recomputation's copies of them
    int vq_state_stride_ = 0;
    Head head_;
    std::unique_ptr<T5Bias> t5_;  // position t5_bias: the table resolved per distance
    Recompute recompute_;
    Precision precision_;
    Bf16Scratch bf16_;  // bf16 precision: the GEMMs' operands (in acts_)
    // bf16: the active block's vectors, or ln_f's and the head bias, rounded (in acts_).
    float* block_vectors16_ = nullptr;
    BlockTensors block16_;
    ModelTensors root16_;
    int max_batch_, max_seq_;
    kernels::DeviceBuffer acts_mem_;  // the activations' memory off the CPU (acts_ lays it out)
    Arena acts_;
    // Off the CPU: each forward's tokens and targets copied to the device, its losses back.
    kernels::DeviceBuffer tokens_dev_, targets_dev_;
    std::vector<float> host_losses_;
    float* embed_;  // (N,C) residual stream entering block 0
    std::vector<BlockActs> blocks_;
    float *lnf_, *lnf_mean_, *lnf_rstd_;  // (N,C) (N) (N)
    float* logits_;                       // (N,Vl), reused in place for dlogits
    float *losses_, *row_max_, *ce_stats_;
    // Backward scratch, shared by all blocks.
    float *dres_, *dln_, *dbranch_, *dy_, *dqkv_, *da_, *dh_;
    WeightViews views_;
    const std::int32_t* tokens_ = nullptr;
    int B_ = 0, T_ = 0;
    bool grad_ready_ = false, dropped_ = false;
    std::uint64_t drop_seed_ = 0;
    std::int64_t drop_step_ = 0, drop_row0_ = 0;
    std::function<void(int)> block_hook_;
    CoordStats* coord_ = nullptr;
    bool recording_ = false;  // coord_ set and this forward trains
    std::vector<double>* resid_sums_ = nullptr;
};

}  // namespace meshlm

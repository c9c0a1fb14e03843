// GPT-2: token + learned position embeddings, L pre-LayerNorm blocks
//   x = x + c_proj(attn(c_attn(ln_1(x))));  x = x + mlp.c_proj(gelu(mlp.c_fc(ln_2(x))))
// a final LayerNorm and a head tied to the token embedding (logits = ln_f(x) wte^T).
//
// The model owns only its activations, planned for at most (max_batch, max_seq) when it is
// built; parameters and gradients are flat buffers handed in by the caller (laid out by
// layout()), or arrive block by block from a ParamStream (model/param_stream.h), so sharding
// strategies can hand it gathered views.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "meshlm/core/buffer.h"
#include "meshlm/model/gpt2_weights.h"
#include "meshlm/model/model_config.h"
#include "meshlm/model/param_layout.h"
#include "meshlm/model/param_stream.h"

namespace meshlm {

// Fills params (layout of gpt2_layout) with GPT-2's init: N(0, std) weights, residual output
// projections N(0, std / sqrt(2L)), zero biases, unit LayerNorm gains. Seeded, thread-free.
void gpt2_init(const ModelConfig& cfg, const ParamLayout& layout, float* params,
               std::uint64_t seed);
// The same values on the flat range [begin, end) only, `params` pointing at element `begin` (a
// ZeRO chunk, so a sharded model is initialized without ever holding it whole).
void gpt2_init_range(const ModelConfig& cfg, const ParamLayout& layout, float* params,
                     std::uint64_t seed, std::size_t begin, std::size_t end);

// Floats of activations the model plans for a (B, T) batch; info reports it without building.
std::size_t gpt2_activation_floats(const ModelConfig& cfg, int B, int T);

class GPT2 {
  public:
    GPT2(const ModelConfig& cfg, int max_batch, int max_seq);

    const ModelConfig& config() const { return cfg_; }
    const ParamLayout& layout() const { return layout_; }
    std::size_t activation_bytes() const { return acts_.capacity() * sizeof(float); }

    // Runs the model on tokens (B, T), B*T <= max_batch*max_seq and T <= max_seq. With targets,
    // returns the mean cross-entropy over the
    // rows whose target is >= 0, and when grad_scale != 0 leaves scale * dloss/dlogits in the
    // logits buffer for backward(). Without targets, returns 0 and leaves the logits.
    float forward(const float* params, const std::int32_t* tokens, const std::int32_t* targets,
                  int B, int T, float grad_scale = 0.f);
    // Accumulates gradients (+=) into grads for the last forward (which had grad_scale != 0).
    void backward(const float* params, float* grads);

    // With a stream (nullptr = none), forward and backward take parameters and put gradients a
    // unit at a time through it (FSDP) and ignore their params / grads arguments.
    void set_param_stream(ParamStream* stream) { views_.set_stream(stream); }

    // Called by backward() as soon as block `layer`'s parameter gradients are complete for this
    // call (layers L-1 down to 0), so data parallelism can start reducing them while earlier
    // blocks are still being differentiated. The embeddings and ln_f finish only at the end.
    void set_block_backward_hook(std::function<void(int layer)> hook) {
        block_hook_ = std::move(hook);
    }

    const float* logits() const { return logits_; }  // (B*T, V) after forward
    const float* losses() const { return losses_; }  // (B*T) per-token losses

  private:
    struct BlockActs {
        float *ln1, *ln1_mean, *ln1_rstd;  // (N,C) (N) (N)
        float* qkv;                        // (N,3C)
        float *atty, *lse;                 // (N,C) (B,H,T)
        float* res_mid;                    // (N,C) residual after attention
        float *ln2, *ln2_mean, *ln2_rstd;  // (N,C) (N) (N)
        float *fch, *fch_gelu;             // (N,4C) before and after GELU
        float* res_out;                    // (N,C) residual after the MLP
    };

    ModelConfig cfg_;
    ParamLayout layout_;
    int max_batch_, max_seq_;
    Arena acts_;
    float* embed_;  // (N,C) residual stream entering block 0
    std::vector<BlockActs> blocks_;
    float *lnf_, *lnf_mean_, *lnf_rstd_;  // (N,C) (N) (N)
    float* logits_;                       // (N,V), reused in place for dlogits
    float* losses_;                       // (N)
    // Backward scratch, shared by all blocks.
    float *dres_, *dln_, *datty_, *dqkv_, *dfch_, *dfch_gelu_;
    // Views of the parameters and gradients of the current call (rebound each call).
    WeightViews views_;
    // The last forward's inputs, for backward.
    const std::int32_t* tokens_ = nullptr;
    int B_ = 0, T_ = 0;
    bool grad_ready_ = false;
    std::function<void(int)> block_hook_;
};

}  // namespace meshlm

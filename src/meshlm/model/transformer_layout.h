// The transformer's parameter registry: every tensor a ModelConfig implies, in a fixed order,
// with the facts sharding, the optimizer and checkpoints read (core/param_layout.h).
//
// Names are meshlm's (GPT-2's Hugging Face names where GPT-2 has the tensor), weights [out, in]:
//   wte.weight [V, C]; wpe.weight [P, C] (learned positions); wpe.scale [1] (scaled sinusoids)
//   h.l.ln_1.{weight,bias}; h.l.attn.c_attn.{weight,bias} [(H + 2K) D, C]: q heads | k | v
//   h.l.attn.c_proj.{weight [C, H D], bias}; h.l.ln_2.* (sequential blocks only)
//   h.l.mlp.c_fc.{weight [F or 2F (gate | up), C], bias}; h.l.mlp.c_proj.{weight [C, F], bias}
//   ln_f.{weight,bias}; lm_head.weight [V, C] (untied head); lm_head.bias [V]
// Biases exist as the config says (norm_bias, qkv_bias, proj_bias, mlp_bias, head_bias).
// Units: 0 = wte, wpe; 1 + l = block l; L + 1 = ln_f and the head.
#pragma once

#include <cstdint>

#include "meshlm/core/param_layout.h"
#include "meshlm/model/model_config.h"

namespace meshlm {

// The layout of model rank `rank` of `model` tensor-parallel ranks (1: the whole model, which
// files use). Slices keep the whole model's names and order; a shard's shapes are its local
// ones (the vocabulary padded to a multiple of `model` inside). Throws InvalidInput when the
// heads, key/value heads or MLP width do not divide by `model`.
ParamLayout transformer_layout(const ModelConfig& cfg, int model = 1);

// Fills [begin, end) of a flat buffer laid out by transformer_layout(cfg, model) for model rank
// `rank` (`params` pointing at element `begin`) with the init of `seed`: every tensor draws
// from its own seekable stream (keyed by its index in the whole layout, one Philox block per
// normal), so the values never depend on threads, tensor or ZeRO sharding: a shard holds
// exactly its part of the single-process init. Padding is left untouched.
void init_params(const ModelConfig& cfg, const ParamLayout& layout, int model, int rank,
                 float* params, std::uint64_t seed, std::size_t begin, std::size_t end);
// The whole single-process model (layout = transformer_layout(cfg)).
inline void init_params(const ModelConfig& cfg, const ParamLayout& layout, float* params,
                        std::uint64_t seed) {
    init_params(cfg, layout, 1, 0, params, seed, 0, layout.total());
}

}  // namespace meshlm

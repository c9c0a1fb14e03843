// How tensor parallelism (Megatron-style, over M model ranks) cuts the GPT-2 parameters, and
// the moves between the full single-process layout (gpt2_layout) and one rank's local shard.
//
// Rank r of M holds, per block (C width, F = 4C MLP width, Cl = C/M, Fl = F/M, Vl = V/M):
//   attn.c_attn  weight (3Cl, C), bias (3Cl)  rows of its heads r*H/M.. : the q rows, then the
//                k rows, then the v rows (local q | k | v, so attention runs on Cl, H/M heads)
//   attn.c_proj  weight (C, Cl)                its columns (input features of its heads)
//   mlp.c_fc     weight (Fl, C), bias (Fl)     rows r*Fl..(r+1)*Fl
//   mlp.c_proj   weight (C, Fl)                columns r*Fl..(r+1)*Fl
//   wte          (Vl, C)                       vocabulary rows r*Vl..(r+1)*Vl (the tied head too)
// and replicates the rest: wpe, every LayerNorm, and the biases of the row-parallel c_proj
// layers (added once, after their all-reduce). The local layout has gpt2_layout's slice names
// and order with these shapes, so bind_weights() binds it. Every split must divide evenly
// (check_model_parallel_shapes); a vocabulary that does not is padded by the caller (GPT-2's
// 50257 -> 50304) rather than split unevenly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "meshlm/model/model_config.h"
#include "meshlm/model/param_layout.h"
#include "meshlm/parallel/comm.h"

namespace meshlm {

enum class TpSplit {
    replicated,  // every model rank holds the whole tensor
    rows,        // a contiguous block of dim 0 (column-parallel weights, wte)
    columns,     // a contiguous block of dim 1 (row-parallel weights)
    qkv_rows,    // a block of rows from each of the q, k and v thirds of dim 0
};

// The split of a gpt2_layout parameter, from its name.
TpSplit tp_split_of(const std::string& name);

// This rank's local layout for M model ranks. Throws InvalidInput when a split does not divide.
ParamLayout tp_local_layout(const ModelConfig& cfg, int model);

// Calls f(full_offset, local_offset, length) for each contiguous piece of a full tensor of
// `shape` named `name` that rank `rank` of `model` holds (offsets in elements, within the
// tensor and within its local shard).
void tp_for_each_piece(const std::string& name, const Shape& shape, int model, int rank,
                       const std::function<void(std::size_t, std::size_t, std::size_t)>& f);

// full (gpt2_layout) -> local (tp_local_layout) of rank `rank`. Padding is left untouched.
void tp_scatter(const ModelConfig& cfg, int model, int rank, const float* full, float* local);
// local of rank `rank` -> its part of full; placing every rank's shard rebuilds full.
void tp_place(const ModelConfig& cfg, int model, int rank, const float* local, float* full);
// Every rank gets the full buffer from the local shards of the model-parallel group `comm`
// (an all-gather of the flat shards, then tp_place). Collective over comm.
void tp_gather(const ModelConfig& cfg, Comm& comm, const float* local, float* full);

// This rank's shard of gpt2_init(seed): the same weights as a single-process run with that
// seed, drawn piece by piece (init streams are per whole parameter and seekable), never the
// full model.
void tp_init_shard(const ModelConfig& cfg, int model, int rank, float* local, std::uint64_t seed);
// The same on [begin, end) of the local buffer only, `local` pointing at element `begin` (a
// ZeRO chunk of the shard, for FSDP).
void tp_init_range(const ModelConfig& cfg, int model, int rank, float* local, std::uint64_t seed,
                   std::size_t begin, std::size_t end);

// Sum of squares of a TP-sharded buffer over the whole model (for global gradient-norm
// clipping): sharded slices summed over the model ranks, replicated ones counted once.
// Collective over comm; every rank gets the same value.
double tp_sum_squares(const ParamLayout& local_layout, const float* local, Comm& comm);

}  // namespace meshlm

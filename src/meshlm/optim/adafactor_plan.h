// What Adafactor needs to know about the part of the model a rank updates. Its statistics are
// per WHOLE tensor (row and column means of g^2, the RMS of the update and of the parameter),
// while a rank holds a flat range of its local buffer: a ZeRO chunk may cut through tensors and
// a tensor-parallel shard holds some rows or columns of a matrix. The plan lists, from the
// registry's facts, each tensor with its whole shape and the contiguous pieces of it in the
// rank's range (where each piece starts in the whole tensor), so the optimizer can add its
// elements' contributions to per-tensor sums that the ranks then add up.
//
// Factored second moments (optax's scale_by_factored_rms): a 2-D tensor whose smaller dim is at
// least optim.adafactor_min_dim_size_to_factor keeps one statistic per row and per column of the
// whole tensor -- tiny (rows + cols floats), so every rank keeps them all, replicated, in one
// buffer. Checkpoints name them exp_avg_sq_row.<tensor> [rows] (mean over the columns of
// g^2 + eps, decayed) and exp_avg_sq_col.<tensor> [cols]. Every other tensor keeps a full
// second moment in the flat slot exp_avg_sq, sharded with the parameters like AdamW's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "meshlm/core/param_layout.h"
#include "meshlm/core/state_tensor.h"
#include "meshlm/core/tensor.h"
#include "meshlm/optim/optim_config.h"

namespace meshlm {

struct AdafactorTensor {
    std::int64_t rows, cols;  // the whole tensor as a row-major matrix (a vector: n x 1)
    bool factored;
    std::size_t stat;  // factored: its row statistics at stat, its columns' at stat + rows
    std::size_t numel() const { return static_cast<std::size_t>(rows * cols); }
};

// A contiguous run of one tensor's elements in the rank's range. What the rank holds of a
// tensor is a block of whole rows (rows split, replicated) or of a column range (columns split),
// row-major [*, width], its (0, 0) at the whole tensor's (row0, col0); the run is elements
// [first, first + numel) of that block: element k is at whole (row0 + (first + k) / width,
// col0 + (first + k) % width).
struct AdafactorPiece {
    std::size_t offset, numel;  // in the range the optimizer updates
    int tensor;
    std::size_t first;
    std::int64_t width, row0, col0;
    // Whether this rank's sums over the piece count: false for a tensor every model rank holds
    // whole (replicated under tensor parallelism) on model ranks other than 0, so that summing
    // over the model ranks counts it once. The piece is updated all the same.
    bool counts;
};

struct AdafactorPlan {
    std::vector<AdafactorTensor> tensors;  // one per slice of the layout, in its order
    std::vector<AdafactorPiece> pieces;    // by offset
    std::vector<StateTensor> stats;        // the factored statistics, named
    std::size_t stat_floats = 0;
    bool empty() const { return tensors.empty(); }
};

// The plan for range [begin, end) of `layout`, model rank `model_rank` of `model_ranks`'s local
// layout (transformer_layout(cfg, M); the whole layout with 1). Moving averages
// (ParamSlice::ema_decay) are not the optimizer's: they get no piece. The tensors and their
// statistics depend only on the whole shapes, so every rank of a run plans the same ones.
AdafactorPlan adafactor_plan(const ParamLayout& layout, int model_ranks, int model_rank,
                             std::size_t begin, std::size_t end, const OptimConfig& cfg);

// Whether a whole tensor of `shape` keeps factored statistics (optax's _factored_dims).
bool adafactor_factors(const Shape& shape, const OptimConfig& cfg);

}  // namespace meshlm

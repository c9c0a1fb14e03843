// What a diagnostics step (log.diag_interval) records inside Learner::train_step, as sums the
// ranks add up; train/diagnostics.h turns them into metrics. Recording only reads: the step's
// gradients, update and loss are bitwise those of an unrecorded step.
//
// The gradient noise scale needs the squared norm of a gradient over a smaller batch than the
// step's. The step already computes one, so recording it costs a read of the gradients, not a
// pass of the model:
//   several data-parallel ranks (ZeRO stage 0-1): each rank's own gradient, summed block by
//     block just before the backward hook hands the block to the all-reduce (and the rest just
//     before the reducer's finish);
//   one data rank with train.grad_accum > 1: the first micro-batch's gradient, summed when its
//     backward ends (the later micro-batches add theirs on top).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "meshlm/core/param_layout.h"
#include "meshlm/core/tensor.h"

namespace meshlm {

struct DiagSums {
    enum class Small { none, rank, first_micro };

    // [2 * n_layer]: sum of x^2 of the residual stream after block l, then its element count
    // (model/transformer.h set_residual_sums).
    std::vector<double> resid;
    // Per slice of the layout, over what this rank's optimizer step updated: sum of the
    // update's squares, and of the updated weights' squares.
    std::vector<double> update_sq, weight_sq;
    // The small batch's gradient: its sum of squares as the gradient buffer holds it (scaled by
    // 1 / big_tokens), its scored targets, and the step's (all ranks). small = none: not
    // available this step, `missing` says why.
    Small small = Small::none;
    std::string missing;
    double grad_sq = 0, small_tokens = 0, big_tokens = 0;

    void reset(int n_layer, std::size_t slices);
    // Before the step's micro-batches: picks the small batch (see above) and counts its tokens.
    // `per`: targets per micro-batch; `scored`: the step's scored targets, all ranks.
    void start_step(const std::int32_t* targets, std::size_t per, int micro, std::int64_t scored,
                    bool distributed, bool overlapped, bool tensor_parallel);
    // After micro-batch m's backward: the first micro-batch's gradient (one data rank).
    void micro_done(int m, const ParamLayout& layout, const float* grads, Device d);
    // Several ranks: [lo, hi) of this rank's gradient is final and about to be all-reduced.
    void rank_range(const ParamLayout& layout, const float* grads, std::size_t lo, std::size_t hi,
                    Device d);
    // Several ranks, before the reducer's finish: what the blocks' ranges left out.
    void rank_rest(const ParamLayout& layout, const float* grads,
                   const std::vector<std::pair<std::size_t, std::size_t>>& blocks, Device d);
    // After the optimizer step over [lo, hi) of the layout: before and after on the host, at
    // element lo.
    void add_update(const ParamLayout& layout, const float* before, const float* after,
                    std::size_t lo, std::size_t hi);
};

// Sum of squares of grads[lo, hi) (grads at element 0 of the layout), leaving out running
// statistics (ParamSlice::ema_decay), whose gradient slot holds no gradient.
double grad_sum_squares(const ParamLayout& layout, const float* grads, std::size_t lo,
                        std::size_t hi, Device d);

}  // namespace meshlm

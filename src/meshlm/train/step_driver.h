// The forward and backward passes of a Learner's step: every micro-batch of this rank's rows
// through the model, with the dropout keys, the Transformer-VQ carry, and the gradient
// reduction overlapped with the backward (stages 0-1) or streamed by FSDP (stages 2-3); and the
// evaluation forwards without gradients.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "meshlm/model/transformer.h"
#include "meshlm/parallel/comm.h"
#include "meshlm/parallel/grad_reducer.h"
#include "meshlm/train/chunked_losses.h"
#include "meshlm/train/diag_sums.h"
#include "meshlm/train/param_state.h"
#include "meshlm/train/vq_carry.h"

namespace meshlm {

class StepDriver {
  public:
    // Plans for micro-batches of (batch, seq) rows; model, state and dp outlive the driver.
    StepDriver(Transformer& model, ParamState& state, Comm& dp, const ModelConfig& cfg,
               const ParamLayout& layout, int batch, int seq);
    StepDriver(const StepDriver&) = delete;
    StepDriver& operator=(const StepDriver&) = delete;

    void set_dropout(std::uint64_t seed, std::int64_t row0) {
        drop_seed_ = seed, drop_row0_ = row0;
    }
    VqCarry& carry() { return carry_; }
    // The next step's gradients also go into `d`'s sums (diag_sums.h; read only); null = none.
    void set_diagnostics(DiagSums* d) { diag_ = d; }

    // The forward and backward passes of one optimizer step's `micro` micro-batches of (B, T)
    // rows (learner.h Learner::train_step), after state.begin_step(): leaves the reduced
    // gradients in `state` and returns the mean loss over every scored target of all ranks.
    // `step` keys the dropout masks.
    float accumulate(const std::int32_t* tokens, const std::int32_t* targets, int micro, int B,
                     int T, long step);
    // Forward without gradients (FSDP: streamed); the mean loss.
    float eval_forward(const std::int32_t* tokens, const std::int32_t* targets, int B, int T);
    // Per-token losses (learner.h Learner::eval_losses).
    const float* eval_losses(const std::int32_t* tokens, const std::int32_t* targets, int B, int T);

  private:
    // Micro-batch m's forward and backward; returns its summed loss over its n scored targets.
    double micro_step(const std::int32_t* tokens, const std::int32_t* targets, int m, int micro,
                      int B, int T, std::size_t n, float grad_scale, bool overlap, long step);

    Transformer& model_;
    ParamState& state_;
    Comm& dp_;
    const ModelConfig& cfg_;
    const ParamLayout& layout_;
    int batch_, seq_;
    VqCarry carry_;
    DiagSums* diag_ = nullptr;
    std::unique_ptr<ChunkedLosses> eval_chunks_;  // rows longer than planned (VQ)
    std::vector<std::int32_t> masked_row_;        // FSDP: tokens 0 then targets -1, one row of seq_
    std::uint64_t drop_seed_ = 0;
    std::int64_t drop_row0_ = 0;
    // Stages 0-1: the gradient all-reduce starts block by block during backward.
    GradReducer reducer_;
    std::vector<std::pair<std::size_t, std::size_t>> block_ranges_;  // [lo, hi) per block
};

}  // namespace meshlm

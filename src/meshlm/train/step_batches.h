// The rows each training step trains on, on one data-parallel rank: read from the loader, or
// drawn as synthetic tokens (keyed by the step, so any layout draws alike: the whole global
// micro-batch is drawn and a rank keeps its rows), shaped by the sequence-length warmup, and with
// model.vq.update_len cut into chunks: a batch is read at its first chunk and trained chunk by
// chunk, one optimizer step each.
//
// exports: StepBatches
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "meshlm/data/loader.h"
#include "meshlm/train/seq_warmup.h"
#include "meshlm/train/trainer.h"

namespace meshlm {

class StepBatches {
  public:
    // U: the tokens a row trains on per step (model.chunk_len); `loader` nullptr = synthetic.
    // `rank` of `ranks` data-parallel ranks.
    StepBatches(const TrainJob& job, int U, DataLoader* loader, int rank, int ranks);

    // Fills tokens() / targets() with 0-based step `step`'s rows (all micro-batches);
    // `batch_offset`: synthetic batches skipped by rollbacks. Returns the micro-batch's shape.
    StepShape fill(long step, long batch_offset);
    // Skips the loader past `batches` batches of the steps from `step` on (a rollback).
    void skip(long step, long batches);

    // 0-based `step` starts a batch (the VQ carry starts afresh there).
    bool starts_batch(long step) const { return step % chunks_ == 0; }
    long chunks() const { return chunks_; }  // optimizer steps per batch: T / U
    int chunk_len() const { return U_; }
    // Tokens one step trains on, over every data-parallel rank.
    std::uint64_t tokens_per_step() const;
    // Also scratch for evaluation: at least B x T ids each.
    std::int32_t* tokens() { return tokens_.data(); }
    std::int32_t* targets() { return targets_.data(); }

  private:
    void read_batch(long step, long batch_offset, std::int32_t* tok, std::int32_t* tgt);

    const TrainJob& job_;
    DataLoader* loader_;
    int rank_, ranks_, B_, T_, U_, accum_;
    long chunks_;
    std::size_t per_micro_;                            // B x T
    std::vector<std::int32_t> tokens_, targets_;       // what the step trains on
    std::vector<std::int32_t> batch_tok_, batch_tgt_;  // with chunks: the whole batch
    std::vector<std::int32_t> all_tok_, all_tgt_;      // synthetic, several ranks: every row
};

}  // namespace meshlm

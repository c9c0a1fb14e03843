#include "meshlm/train/step_batches.h"

#include <algorithm>

#include "meshlm/core/rng.h"
#include "meshlm/data/synthetic.h"
#include "meshlm/train/chunked_losses.h"

namespace meshlm {

StepBatches::StepBatches(const TrainJob& job, int U, DataLoader* loader, int rank, int ranks)
    : job_(job),
      loader_(loader),
      rank_(rank),
      ranks_(ranks),
      B_(job.train.batch_size),
      T_(job.train.seq_len),
      U_(U),
      accum_(job.train.grad_accum),
      chunks_(T_ / U),
      per_micro_(static_cast<std::size_t>(B_) * T_),
      tokens_(per_micro_ * accum_),
      targets_(per_micro_ * accum_) {
    if (chunks_ > 1) batch_tok_.resize(per_micro_ * accum_), batch_tgt_.resize(per_micro_ * accum_);
    if (!loader_ && ranks_ > 1)
        all_tok_.resize(per_micro_ * ranks_), all_tgt_.resize(per_micro_ * ranks_);
}

std::uint64_t StepBatches::tokens_per_step() const {
    return per_micro_ / chunks_ * accum_ * ranks_;
}

// Every micro-batch of the step's batch into tok / tgt.
void StepBatches::read_batch(long step, long batch_offset, std::int32_t* tok, std::int32_t* tgt) {
    const StepShape shape = step_shape(job_.train, step);
    const int Ts = shape.len, Bs = shape.rows, V = job_.model.vocab_size;
    Philox rng(job_.train.seed, 0xDA7A0000ull + static_cast<std::uint64_t>(step + batch_offset));
    for (int m = 0; m < accum_; ++m) {
        std::int32_t *mt = tok + m * per_micro_, *mg = tgt + m * per_micro_;
        if (loader_) {
            loader_->next_batch(Bs * ranks_, Ts, mt, mg, rank_, ranks_);
        } else if (ranks_ == 1) {
            random_tokens(Bs, Ts, V, rng, mt, mg);
        } else {
            random_tokens(Bs * ranks_, Ts, V, rng, all_tok_.data(), all_tgt_.data());
            const std::size_t mine = static_cast<std::size_t>(Bs) * Ts, at = mine * rank_;
            std::copy_n(all_tok_.data() + at, mine, mt);
            std::copy_n(all_tgt_.data() + at, mine, mg);
        }
    }
}

StepShape StepBatches::fill(long step, long batch_offset) {
    const int chunk = static_cast<int>(step % chunks_);
    if (chunks_ == 1) {
        read_batch(step, batch_offset, tokens_.data(), targets_.data());
        return step_shape(job_.train, step);
    }
    if (chunk == 0) read_batch(step, batch_offset, batch_tok_.data(), batch_tgt_.data());
    copy_row_chunk(batch_tok_.data(), accum_ * B_, T_, chunk, U_, tokens_.data());
    copy_row_chunk(batch_tgt_.data(), accum_ * B_, T_, chunk, U_, targets_.data());
    return step_shape(job_.train, step);
}

void StepBatches::skip(long step, long batches) {
    if (!loader_) return;
    for (long b = 0; b < batches; ++b) {
        const StepShape sh = step_shape(job_.train, step + b * chunks_);
        for (int m = 0; m < accum_; ++m)
            loader_->next_batch(sh.rows * ranks_, sh.len, tokens_.data(), targets_.data(), rank_,
                                ranks_);
    }
}

}  // namespace meshlm

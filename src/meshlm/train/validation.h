// A run's validation passes: a fresh, unshuffled loader per pass, so every pass scores the same
// rows (a capped pass scores the first ones); data-parallel ranks score their rows of each
// global batch and sum the results. Progress shows live on a terminal, every 10 s in a log.
//
// exports: Validation
#pragma once

#include <cstdint>
#include <iosfwd>

#include "meshlm/parallel/comm.h"
#include "meshlm/train/evaluate.h"
#include "meshlm/train/learner.h"
#include "meshlm/train/train_data.h"

namespace meshlm {

class Validation {
  public:
    // `dp`: the data-parallel ranks (the host mesh's); `out` shows the progress (rank 0's).
    // With synthetic data there is nothing to score: split_batches() is 0.
    Validation(const TrainJob& job, const TrainData& data, Learner& learner, Comm& dp,
               std::ostream& out);

    // Scores up to `max_batches` batches (0 = the whole split) of B x T tokens per rank, with
    // tokens / targets as scratch of B x T ids; `what` heads the progress line. Collective over
    // the data-parallel ranks.
    EvalResult run(long max_batches, std::int32_t* tokens, std::int32_t* targets, const char* what);

    long split_batches() const { return split_batches_; }
    // The batches a pass of `max_batches` (0 = all) scores.
    long batches(long max_batches) const {
        return max_batches > 0 && max_batches < split_batches_ ? max_batches : split_batches_;
    }
    // Tokens of one batch over every data-parallel rank.
    std::uint64_t batch_tokens() const;

  private:
    const TrainJob& job_;
    const TrainData& data_;
    Learner& learner_;
    Comm& dp_;
    std::ostream& out_;
    bool writer_;  // world rank 0: shows the progress
    bool live_;    // and out is a terminal
    long split_batches_ = 0;
};

}  // namespace meshlm

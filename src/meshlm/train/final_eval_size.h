// How many validation batches the final evaluation scores. train.final_eval_batches N > 0 is N
// batches and 0 the whole split; -1 (the default) sizes it to the run: the whole split, but at
// most as many tokens as the run trains on (train.steps x the tokens of a step, over every
// rank), so a 10-step smoke test does not spend minutes scoring a split it barely trained on.
// A run with periodic evaluations (log.eval_interval below train.steps) ends with one at least as
// large as theirs, so its last validation loss compares with theirs. The cap counts the whole
// run's tokens, not this process's: a resumed run ends with the evaluation of an uninterrupted
// one.
//
// exports: FinalEvalSize, final_eval_size
#pragma once

#include <cstdint>
#include <string>

#include "meshlm/train/train_config.h"

namespace meshlm {

struct FinalEvalSize {
    long batches = 0;  // for evaluate(): 0 = the whole split
    // Set when the rule scores less than the whole split: a line for the start banner that says
    // how much, why and how to score the whole split.
    std::string note;
};

// run_tokens: the tokens the whole run trains on; batch_tokens: those of one evaluation batch
// (B x T over every data-parallel rank); split_batches: the batches of the whole split.
FinalEvalSize final_eval_size(const TrainConfig& tc, const LogConfig& log, std::uint64_t run_tokens,
                              std::uint64_t batch_tokens, long split_batches);

}  // namespace meshlm

#include "meshlm/train/final_eval_size.h"

#include <algorithm>

#include "meshlm/train/progress.h"

namespace meshlm {

FinalEvalSize final_eval_size(const TrainConfig& tc, const LogConfig& log, std::uint64_t run_tokens,
                              std::uint64_t batch_tokens, long split_batches) {
    if (tc.final_eval_batches >= 0) return {tc.final_eval_batches, ""};
    const bool periodic = log.eval_interval > 0 && log.eval_interval < tc.steps;
    if (periodic && tc.eval_batches == 0) return {0, ""};  // they score the whole split
    long cap = static_cast<long>((run_tokens + batch_tokens - 1) /
                                 std::max<std::uint64_t>(batch_tokens, 1));
    const bool raised = periodic && tc.eval_batches > cap;
    if (raised) cap = tc.eval_batches;
    if (cap >= split_batches) return {0, ""};
    FinalEvalSize s;
    s.batches = cap;
    s.note = "final evaluation: " + std::to_string(cap) + " of the " +
             std::to_string(split_batches) + " validation batches, sized to the run (" +
             (raised ? "train.eval_batches, as its periodic evaluations"
                     : "at most the " + human_count(static_cast<double>(run_tokens)) +
                           " tokens its " + std::to_string(tc.steps) + " steps train on") +
             "; train.final_eval_batches=0 scores the whole split)";
    return s;
}

}  // namespace meshlm

#include "meshlm/train/run_eta.h"

#include <algorithm>
#include <numeric>

namespace meshlm {
namespace {

// Multiples of k (> 0) in [from, to).
long multiples_in(long k, long from, long to) {
    if (to <= from) return 0;
    return (to - 1) / k - (from - 1) / k;
}

}  // namespace

RemainingWork remaining_work(const RunSchedule& s, long done) {
    RemainingWork left;
    left.steps = s.steps - done;
    const long e = s.eval_interval, c = s.checkpoint_interval;
    // Periodic evaluations fall before the last step; the last step has the final one.
    const long periodic = s.evaluates && e > 0 ? multiples_in(e, done, s.steps) : 0;
    if (s.evaluates) left.eval_batches = periodic * s.eval_batches + s.final_eval_batches;
    if (c > 0) {
        const long before_last = multiples_in(c, done, s.steps);
        left.checkpoints = before_last + 1;
        if (s.only_better && s.evaluates) {
            // A due checkpoint without an evaluation of its own step evaluates first.
            const long shared = e > 0 ? multiples_in(std::lcm(c, e), done, s.steps) : 0;
            left.eval_batches += (before_last - shared) * s.eval_batches;
        }
    }
    return left;
}

RunEta::RunEta(double eval_batch_steps, std::uint64_t checkpoint_bytes)
    : eval_batch_steps_(eval_batch_steps),
      checkpoint_guess_(static_cast<double>(checkpoint_bytes) / 500e6) {}

void RunEta::add_evaluation(long batches, double seconds) {
    eval_batches_ += batches;
    eval_seconds_ += seconds;
}

void RunEta::add_checkpoint(double seconds) {
    ++checkpoints_;
    checkpoint_seconds_ += seconds;
}

std::optional<double> RunEta::eta(double elapsed, long steps, const RemainingWork& left) const {
    if (left.steps <= 0 && left.eval_batches <= 0 && left.checkpoints <= 0) return std::nullopt;
    const double training = std::max(0.0, elapsed - eval_seconds_ - checkpoint_seconds_);
    const double step = steps > 0 ? training / static_cast<double>(steps) : 0;
    // A forward pass costs about a third of a training step's forward and backward per token.
    const double batch = eval_batches_ > 0 ? eval_seconds_ / static_cast<double>(eval_batches_)
                                           : step * eval_batch_steps_ / 3;
    const double checkpoint = checkpoints_ > 0
                                  ? checkpoint_seconds_ / static_cast<double>(checkpoints_)
                                  : checkpoint_guess_;
    return step * static_cast<double>(left.steps) + batch * static_cast<double>(left.eval_batches) +
           checkpoint * static_cast<double>(left.checkpoints);
}

}  // namespace meshlm

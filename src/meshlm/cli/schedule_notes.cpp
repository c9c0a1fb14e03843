#include "meshlm/cli/schedule_notes.h"

namespace meshlm {

std::string schedule_notes(const Config* saved, const Config& now) {
    std::string out;
    const long steps = now.train.steps;
    // optim.decay_steps 0 means "decay until train.steps": only then does the schedule move.
    if (saved && saved->train.steps != steps && now.optim.decay_steps == 0 &&
        now.optim.schedule != "constant")
        out += "note: train.steps is " + std::to_string(steps) + ", " +
               std::to_string(saved->train.steps) +
               " when the checkpoint was written: the learning-rate schedule now ends at step " +
               std::to_string(steps) + " (keep the old one with --config.optim.decay_steps=" +
               std::to_string(saved->train.steps) + ")\n";
    if (now.optim.warmup_steps > steps)
        out += "note: optim.warmup_steps (" + std::to_string(now.optim.warmup_steps) +
               ") exceeds train.steps (" + std::to_string(steps) +
               "): the run ends inside the warmup and never reaches optim.lr\n";
    return out;
}

}  // namespace meshlm

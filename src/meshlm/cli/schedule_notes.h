// One-line notes on a learning-rate schedule that would otherwise surprise silently: a resume
// with another train.steps (the decay stretches or shrinks to the new length) and a warmup
// longer than the run (the peak rate is never reached).
#pragma once

#include <string>

#include "meshlm/cli/config.h"

namespace meshlm {

// The notes for a run with config `now`; `saved` is the checkpoint's config on a resume, null
// for a fresh run. Each note is one line ending in '\n'; "" when there is nothing to say.
std::string schedule_notes(const Config* saved, const Config& now);

}  // namespace meshlm

// log.profile_steps, the trainer's side of the trace recorder (core/trace.h): each step of the
// window is one "step N" event around everything the loop does for it, and at the end every
// rank writes its events to RUN_DIR/trace/rank_<r>.json, which rank 0 merges into
// RUN_DIR/trace.json (one process, i.e. one track, per rank) for Perfetto or chrome://tracing.
#pragma once

#include <ostream>
#include <string>

#include "meshlm/core/trace.h"
#include "meshlm/parallel/comm.h"
#include "meshlm/train/train_config.h"

namespace meshlm {

// Step `step` (counted from 1): inside `window`, tracing is on for the object's life and the
// step is one event; outside, nothing is recorded.
class TracedStep {
  public:
    TracedStep(const StepRange& window, long step);
    ~TracedStep();
    TracedStep(const TracedStep&) = delete;
    TracedStep& operator=(const TracedStep&) = delete;

  private:
    bool on_;  // before scope_: tracing is switched on before the step's scope opens
    TraceScope scope_;
};

// Collective over `world` when `window` is not empty: writes this rank's file, then rank 0
// merges them into RUN_DIR/trace.json and says so on `out`.
void write_trace_files(Comm& world, const std::string& run_dir, const StepRange& window,
                       std::ostream& out);

}  // namespace meshlm

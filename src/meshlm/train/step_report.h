// Reporting a run's steps: the sinks (the console on every rank, silent but on rank 0;
// metrics.jsonl and TensorBoard on rank 0), a logged step's training values (throughput over the
// interval, MFU never above 100 %, VQ statistics, bytes sent) and the coordinate check's sums
// over every rank.
//
// exports: StepReporter, coord_check_metrics
#pragma once

#include <cstdint>
#include <iosfwd>

#include "meshlm/parallel/comm.h"
#include "meshlm/train/learner.h"
#include "meshlm/train/metric_sink.h"
#include "meshlm/train/start_banner.h"
#include "meshlm/train/trainer.h"

namespace meshlm {

// The coordinate check of the step just taken into m.coord / m.update: every rank's sums added
// up over `world`, then means. Collective.
void coord_check_metrics(const Learner& learner, Comm& world, StepMetrics& m);

class StepReporter {
  public:
    // `resumed_at`: the checkpoint step a resumed run continues from (the files drop what was
    // logged after it), -1 for a fresh run. File sinks only on `writer`.
    StepReporter(const TrainJob& job, bool writer, long resumed_at, const MfuBasis& mfu, int ranks,
                 std::ostream& out);

    // A logged step's training values into m: `tokens` trained in `seconds` since the last
    // report, `bytes` sent by this rank in the step.
    void train_values(StepMetrics& m, const StepStats& st, double seconds, long tokens,
                      std::uint64_t bytes);
    // The step's whole record, with the tokens seen and the time, to every sink.
    void record(StepMetrics& m, std::uint64_t tokens_seen);
    MetricSinks& sinks() { return sinks_; }

  private:
    MetricSinks sinks_;
    MfuBasis mfu_;
    int ranks_;
    std::ostream& out_;
    bool mfu_capped_ = false;  // the note on a peak below the throughput was said
};

}  // namespace meshlm

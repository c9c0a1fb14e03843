// The console's view of a run's metrics: a line per logged step (loss, learning rate, gradient
// norm, throughput, MFU, the codebook's statistics, bytes sent, elapsed time and ETA), a line
// per evaluation, and the final sample.
#pragma once

#include <ostream>

#include "meshlm/train/metric_sink.h"

namespace meshlm {

class ConsoleSink : public MetricSink {
  public:
    explicit ConsoleSink(std::ostream& out) : out_(out) {}
    void train_line(const StepMetrics& m, const StepContext& c) override;
    void validation(const StepMetrics& m, double bits_per_byte, long total_steps) override;
    void text(long step, const std::string& tag, const std::string& text) override;

  private:
    std::ostream& out_;
};

}  // namespace meshlm

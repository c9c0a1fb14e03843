// RUN_DIR/metrics.jsonl as a metric sink: each step's whole record, one line (metrics.h).
#pragma once

#include <string>

#include "meshlm/train/metric_sink.h"
#include "meshlm/train/metrics.h"

namespace meshlm {

class JsonlSink : public MetricSink {
  public:
    // keep_through_step: as MetricsWriter's (a resumed run drops lines past its checkpoint).
    JsonlSink(const std::string& path, long keep_through_step) : writer_(path, keep_through_step) {}
    void record(const StepMetrics& m) override { writer_.write(m); }

  private:
    MetricsWriter writer_;
};

}  // namespace meshlm

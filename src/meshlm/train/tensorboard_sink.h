// TensorBoard event files as a metric sink (log.tensorboard): RUN_DIR/tb/
// events.out.tfevents.<unix time>.<host>, one scalar per metrics.jsonl value (the nested ones
// as "coord/<site>", "update/<tensor>", "vq/<name>") and the final sample as text. A resumed
// run first cuts the earlier files back to the steps up to its checkpoint (each rewritten
// atomically), then writes a new file: every step is in the directory once, as in
// metrics.jsonl. The format: io/tensorboard_event.h, io/tfrecord.h.
#pragma once

#include <cstdio>
#include <string>

#include "meshlm/train/metric_sink.h"

namespace meshlm {

class TensorBoardSink : public MetricSink {
  public:
    // keep_through_step >= 0: a resumed run (events of steps above it are dropped first).
    TensorBoardSink(const std::string& dir, long keep_through_step);
    ~TensorBoardSink() override;
    TensorBoardSink(const TensorBoardSink&) = delete;
    TensorBoardSink& operator=(const TensorBoardSink&) = delete;
    void record(const StepMetrics& m) override;
    void text(long step, const std::string& tag, const std::string& text) override;
    const std::string& path() const { return path_; }

  private:
    void append(const std::string& event);  // one record, flushed
    std::string path_;
    std::FILE* f_ = nullptr;
};

// Rewrites the event files in `dir` without the events of steps above `step`.
void truncate_tensorboard_events(const std::string& dir, long step);

}  // namespace meshlm

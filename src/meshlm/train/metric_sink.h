// Where a run's metrics go: the trainer reports each logged step to one MetricSinks, and every
// sink (the console, metrics.jsonl, TensorBoard event files) writes it its own way.
// A step arrives in parts because the console shows its training line before an evaluation
// starts (which can take a minute), while the files keep one record per step: train_line()
// when the training values are known, validation() after an evaluation, record() once with
// everything. Only world rank 0 has file sinks.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "meshlm/train/metrics.h"

namespace meshlm {

// What the console shows beside a step's metrics.
struct StepContext {
    long total_steps = 0;
    double elapsed = 0;         // seconds since this process started training
    std::optional<double> eta;  // seconds left, evaluations and checkpoints included (run_eta.h)
    int ranks = 1;              // > 1: the bytes sent are shown (m.comm_bytes)
};

class MetricSink {
  public:
    virtual ~MetricSink() = default;
    // A logged step's training values (loss, lr, ...), as soon as they are known.
    virtual void train_line(const StepMetrics&, const StepContext&) {}
    // An evaluation at m.step: m.val_loss, and its bits per byte.
    virtual void validation(const StepMetrics&, double /*bits_per_byte*/, long /*total_steps*/) {}
    // The step's whole record, once.
    virtual void record(const StepMetrics&) {}
    // A text at `step` (the final sample).
    virtual void text(long /*step*/, const std::string& /*tag*/, const std::string& /*text*/) {}
};

// Hands each report to every sink, in the order they were added.
class MetricSinks {
  public:
    void add(std::unique_ptr<MetricSink> sink) { sinks_.push_back(std::move(sink)); }
    void train_line(const StepMetrics& m, const StepContext& c) {
        for (auto& s : sinks_) s->train_line(m, c);
    }
    void validation(const StepMetrics& m, double bits_per_byte, long total_steps) {
        for (auto& s : sinks_) s->validation(m, bits_per_byte, total_steps);
    }
    void record(const StepMetrics& m) {
        for (auto& s : sinks_) s->record(m);
    }
    void text(long step, const std::string& tag, const std::string& text) {
        for (auto& s : sinks_) s->text(step, tag, text);
    }

  private:
    std::vector<std::unique_ptr<MetricSink>> sinks_;
};

}  // namespace meshlm

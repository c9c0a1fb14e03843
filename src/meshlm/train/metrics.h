// A logged step's metrics, and their JSONL form: one JSON object per logged step in
// RUN_DIR/metrics.jsonl (floats as %.9g so they round-trip exactly), written by
// MetricsWriter (the JSONL sink, jsonl_sink.h).
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace meshlm {

struct StepMetrics {
    long step;
    std::optional<float> loss, lr, grad_norm;
    std::optional<double> tokens_per_s, mfu;
    std::optional<float> val_loss;
    // Staged sequence-length warmup (train.seq_warmup_steps > 0): the logged step's row length.
    std::optional<int> seq_len;
    // Data parallel: bytes this rank's collectives sent in the logged step (parallel/traffic.h).
    std::optional<std::uint64_t> comm_bytes;
    // Coordinate check (train.coord_interval): mean |activation| per site, mean |update| / lr
    // per tensor, as "coord" and "update" objects.
    std::vector<std::pair<std::string, double>> coord, update;
    // model.attention vq: commitment error, codebook usage and entropy, as a "vq" object.
    std::vector<std::pair<std::string, double>> vq;
    // Diagnostics (log.diag_interval, train/diagnostics.h): RMS of the residual stream after
    // each block ("act_rms": "h.<l>"), update RMS / weight RMS per tensor ("update_ratio"), the
    // gradient noise scale B_simple ("gns") and the moving averages it is the ratio of:
    // |G|^2 ("gns_grad_sq") and tr(Sigma) ("gns_noise").
    std::vector<std::pair<std::string, double>> act_rms, update_ratio;
    std::optional<double> gns, gns_grad_sq, gns_noise;
    // train.nan_policy: why the step's update was refused ("non_finite", "spike"), the steps
    // skipped so far (skip), the step of the checkpoint the run went back to (rollback).
    std::optional<std::string> fault;
    std::optional<long> skipped_steps, rolled_back_to;
    // Tokens trained on so far (all ranks), and when the step was reported (Unix seconds;
    // metrics.jsonl writes it as an ISO 8601 UTC time, TensorBoard as the event's wall_time).
    std::optional<std::uint64_t> tokens;
    std::optional<double> wall_time;
};

// Formats a float so that reading it back gives the same bits.
std::string exact_float(double v);
std::string metrics_json(const StepMetrics& m);
// "2025-01-31T09:05:03.250Z": Unix seconds as an ISO 8601 UTC time, to the millisecond.
std::string iso_utc_time(double unix_seconds);
// Now, in Unix seconds.
double unix_now();

class MetricsWriter {
  public:
    // Opens (truncates) path; throws InvalidInput if it cannot. With keep_through_step >= 0 (a
    // resumed run) the lines of steps up to it are kept and later ones (logged after the
    // checkpoint the run resumes from) dropped.
    explicit MetricsWriter(const std::string& path, long keep_through_step = -1);
    ~MetricsWriter();
    MetricsWriter(const MetricsWriter&) = delete;
    MetricsWriter& operator=(const MetricsWriter&) = delete;
    void write(const StepMetrics& m);  // appends a line and flushes

  private:
    std::FILE* f_;
};

}  // namespace meshlm

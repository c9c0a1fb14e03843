#include "meshlm/train/step_report.h"

#include <algorithm>
#include <memory>
#include <ostream>

#include "meshlm/model/flops.h"
#include "meshlm/train/console_sink.h"
#include "meshlm/train/jsonl_sink.h"
#include "meshlm/train/tensorboard_sink.h"

namespace meshlm {

void coord_check_metrics(const Learner& learner, Comm& world, StepMetrics& m) {
    const CoordStats& c = learner.coord();
    const std::vector<double>& u = learner.update_sums();
    std::vector<double> all(c.sum);
    all.insert(all.end(), c.count.begin(), c.count.end());
    all.insert(all.end(), u.begin(), u.end());
    if (world.size() > 1) world.all_reduce_sum(all.data(), all.size());
    const std::size_t n = c.sum.size(), t = u.size() / 2;
    for (std::size_t i = 0; i < n; ++i)
        if (all[n + i] > 0) m.coord.emplace_back(c.name(i), all[i] / all[n + i]);
    const auto& slices = learner.layout().slices();
    for (std::size_t i = 0; i < t; ++i)
        if (all[2 * n + t + i] > 0)
            m.update.emplace_back(slices[i].name, all[2 * n + i] / all[2 * n + t + i]);
}

StepReporter::StepReporter(const TrainJob& job, bool writer, long resumed_at, const MfuBasis& mfu,
                           int ranks, std::ostream& out)
    : mfu_(mfu), ranks_(ranks), out_(out) {
    sinks_.add(std::make_unique<ConsoleSink>(out));
    if (!writer) return;
    sinks_.add(std::make_unique<JsonlSink>(job.run_dir + "/metrics.jsonl", resumed_at));
    if (job.log.tensorboard)
        sinks_.add(std::make_unique<TensorBoardSink>(job.run_dir + "/tb", resumed_at));
}

void StepReporter::train_values(StepMetrics& m, const StepStats& st, double seconds, long tokens,
                                std::uint64_t bytes) {
    const double tps = tokens / seconds, peak = mfu_.peak;
    m.loss = st.loss, m.lr = st.lr, m.grad_norm = st.grad_norm;
    m.tokens_per_s = tps;
    // Never above 100 %: throughput beyond the peak means the peak was set or measured too low
    // (say so once).
    const double achieved = tps * mfu_.flops_per_token / (1e9 * ranks_);
    if (peak > 0 && achieved > peak && !mfu_capped_) {
        mfu_capped_ = true;
        out_ << "note: " << static_cast<int>(achieved) << " GFLOP/s per rank exceeds the "
             << precision_name(mfu_.precision) << " peak of " << static_cast<int>(peak)
             << " GFLOP/s" << (mfu_.peak_configured ? " (train.peak_gflops)" : " (measured)")
             << "; MFU is shown capped at 100 %; set train.peak_gflops to the machine's peak\n";
    }
    if (peak > 0)
        m.mfu = std::min(1.0, model_flops_utilization(tps, mfu_.flops_per_token, peak, ranks_));
    if (ranks_ > 1) m.comm_bytes = bytes;
    if (st.vq)
        m.vq = {{"commit", st.vq->commit}, {"usage", st.vq->usage}, {"entropy", st.vq->entropy}};
}

void StepReporter::record(StepMetrics& m, std::uint64_t tokens_seen) {
    m.tokens = tokens_seen;
    m.wall_time = unix_now();
    sinks_.record(m);
}

}  // namespace meshlm

#include "meshlm/train/checkpoint_policy.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <ostream>

#include "meshlm/core/trace.h"
#include "meshlm/io/checkpoint.h"
#include "meshlm/optim/optimizer.h"
#include "meshlm/parallel/rank_activity.h"
#include "meshlm/train/checkpoint_failure.h"
#include "meshlm/train/sharded_checkpoint.h"

namespace meshlm {

CheckpointPolicy::CheckpointPolicy(const TrainJob& job, const DeviceMesh& mesh, Learner& learner,
                                   const TrainData& data, RunProgress& progress, std::string run_id,
                                   RunEta& eta, WeightAverage& average, std::ostream& out)
    : job_(job),
      mesh_(mesh),
      learner_(learner),
      data_(data),
      progress_(progress),
      run_id_(std::move(run_id)),
      eta_(eta),
      average_(average),
      out_(out),
      bytes_(bytes_estimate(job, learner)) {}

std::uint64_t CheckpointPolicy::bytes_estimate(const TrainJob& job, Learner& learner) {
    return checkpoint_bytes_estimate(learner.full_layout().total(),
                                     optimizer_slots(job.optim.name).count(),
                                     learner.optimizer().stat_floats());
}

bool CheckpointPolicy::due(long done) const {
    const int every = job_.checkpoint.interval;
    return every > 0 && (done % every == 0 || done == job_.train.steps);
}

std::string CheckpointPolicy::write(const TrainerState& st) {
    // Several ranks: each writes its own shard (collective); nothing is gathered.
    if (mesh_.world().size() > 1)
        return write_sharded_checkpoint(mesh_, learner_, job_.model, job_.parallel.zero_stage,
                                        job_.run_dir, st, job_.checkpoint);
    // One process: the single-file format (a ZeRO stage >= 1 on one rank still keeps its
    // moments apart from optimizer(); gather_optimizer() gives them whole).
    const float* params = learner_.full_params();
    auto whole = learner_.gather_optimizer();
    Optimizer& o = whole ? *whole : learner_.optimizer();
    return write_checkpoint(job_.run_dir, st, learner_.full_layout(), params, o.m(), o.v(),
                            o.steps_taken(), job_.checkpoint, o.stat_tensors(), o.stats());
}

bool CheckpointPolicy::save(long step, bool must) {
    ActivityPhase phase("checkpoint write");
    TraceScope trace("checkpoint write");
    TrainerState st;
    st.step = step;
    st.tokens_seen = progress_.tokens_seen;
    if (data_.loader) st.loader = data_.loader->state();
    st.seed = job_.train.seed;
    st.batch_offset = progress_.batch_offset;
    st.best_val = progress_.best_val;
    st.config_yaml = job_.resolved_yaml;
    st.run_id = run_id_;
    const auto t0 = std::chrono::steady_clock::now();
    const long every = job_.checkpoint.interval, steps = job_.train.steps;
    const CheckpointAttempt attempt{
        job_.run_dir,
        step,
        bytes_,
        job_.checkpoint.on_error,
        must,
        every > 0 && step < steps ? std::min<long>((step / every + 1) * every, steps) : 0};
    const auto dir = write_checkpoint_or_report([&] { return write(st); }, attempt, out_);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    eta_.add_checkpoint(seconds);
    if (!dir) return false;
    last_ = *dir;
    progress_.last_saved = step;
    char line[64];
    std::snprintf(line, sizeof line, " (%.2f s)", seconds);
    out_ << "step " << std::setw(6) << step << "/" << steps << " | checkpoint " << last_ << line
         << "\n";
    out_ << average_.after_checkpoint(last_, job_.run_dir, step,
                                      job_.checkpoint.on_error == "continue");
    return true;
}

void CheckpointPolicy::at_due_step(long done, std::optional<double> val,
                                   const std::function<double()>& evaluate) {
    if (job_.checkpoint.only_better && !job_.data.synthetic) {
        if (!val) val = evaluate();
        const std::optional<double>& best = progress_.best_val;
        if (best && !(*val < *best)) {  // a NaN never improves
            out_ << "step " << std::setw(6) << done << "/" << job_.train.steps
                 << " | no checkpoint: validation loss " << *val << " did not improve on " << *best
                 << "\n";
            return;
        }
        progress_.best_val = val;
    }
    save(done, false);
}

}  // namespace meshlm

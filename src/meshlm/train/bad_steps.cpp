#include "meshlm/train/bad_steps.h"

#include <exception>
#include <ostream>

#include "meshlm/core/error.h"
#include "meshlm/io/checkpoint.h"
#include "meshlm/train/sharded_checkpoint.h"

namespace meshlm {

BadSteps::BadSteps(const TrainJob& job, const DeviceMesh& mesh, Learner& learner, TrainData& data,
                   StepBatches& batches, RunProgress& progress, CheckpointPolicy& checkpoints,
                   StepReporter& report, std::ostream& out)
    : job_(job),
      mesh_(mesh),
      learner_(learner),
      data_(data),
      batches_(batches),
      progress_(progress),
      checkpoints_(checkpoints),
      report_(report),
      out_(out),
      policy_(parse_nan_policy(job.train.nan_policy)),
      guard_(job.train, mesh.world()) {
    // The guard sees each step's loss and gradient norm before its update.
    learner.set_step_check([this](const StepStats& s) {
        fault_ = guard_.check(s.loss, s.grad_norm);
        return fault_ == StepFault::none;
    });
    Comm& world = mesh.world();
    if (job.train.debug_inject_nan_step > 0 && world.rank() == world.size() - 1)
        learner.inject_nan_at(job.train.debug_inject_nan_step);
}

// Stops the run after a bad step at `done`, with a checkpoint of the step before it.
void BadSteps::halt(long done, const std::string& what, const std::string& why) {
    const long good = done - 1;
    std::string saved;
    if (good % batches_.chunks() != 0) {
        saved = "no checkpoint of step " + std::to_string(good) +
                " (model.vq.update_len: checkpoints are written at batch ends)";
    } else {
        try {
            if (progress_.last_saved != good) checkpoints_.save(good, true);
            saved = "the weights and optimizer state of step " + std::to_string(good) + " are in " +
                    job_.run_dir + "/checkpoints/step_" + std::to_string(good) + " (--resume " +
                    job_.run_dir + " continues from them)";
        } catch (const std::exception& e) {
            saved = e.what();
        }
    }
    out_.flush();  // the console lines before the error
    MESHLM_INVALID("training halted (train.nan_policy=", nan_policy_name(policy_), why, "): ", what,
                   ". The update of step ", done, " was not applied; ", saved,
                   ". To train past such steps set train.nan_policy=skip or rollback; if the loss "
                   "diverges, lower optim.lr (now ",
                   job_.optim.lr, ")",
                   job_.optim.grad_clip > 0 ? "" : " or set optim.grad_clip (clipping is off)");
}

// Reloads checkpoint `dir` and skips the next train.rollback_skip_batches batches; returns the
// checkpoint's step.
long BadSteps::roll_back(const std::string& dir) {
    const TrainerState s = read_checkpoint(dir);
    load_learner_checkpoint(dir, s, job_.model, learner_, mesh_);
    progress_.tokens_seen = s.tokens_seen;
    progress_.best_val = s.best_val;
    progress_.batch_offset = s.batch_offset;
    const long skip = job_.train.rollback_skip_batches;
    if (job_.data.synthetic) progress_.batch_offset += skip * batches_.chunks();
    if (data_.loader) {
        data_.loader->restore(s.loader);
        batches_.skip(s.step, skip);
    }
    guard_.clear();
    progress_.last_saved = s.step;
    checkpoints_.average().drop_after(s.step);
    return s.step;
}

std::optional<long> BadSteps::on_bad_step(long done, const StepStats& st) {
    Comm& world = mesh_.world();
    const std::string site =
        fault_ == StepFault::non_finite ? first_nonfinite_site(world, learner_, st.loss) : "";
    const std::string what = describe_step_fault(fault_, done, st, guard_, site);
    StepMetrics m;
    m.step = done, m.loss = st.loss, m.grad_norm = st.grad_norm, m.fault = step_fault_name(fault_);
    if (policy_ == NanPolicy::halt) {
        report_.record(m, progress_.tokens_seen);
        halt(done, what, "");
    }
    if (policy_ == NanPolicy::skip) {
        learner_.count_skipped_step();
        ++skipped_;
        out_ << what << ": update skipped (train.nan_policy=skip; " << skipped_
             << " skipped so far)\n";
        return std::nullopt;  // the step's log line and metrics say the rest
    }
    const std::optional<std::string> dir = latest_checkpoint(job_.run_dir);
    const int max = job_.train.max_rollbacks;
    if (rollbacks_ >= max || !dir) {
        report_.record(m, progress_.tokens_seen);
        halt(done, what,
             dir ? " after " + std::to_string(rollbacks_) + " rollbacks, train.max_rollbacks"
                 : std::string(", with no checkpoint yet to roll back to"));
    }
    const long to = roll_back(*dir);
    ++rollbacks_;
    m.rolled_back_to = to;
    report_.record(m, progress_.tokens_seen);
    out_ << what << ": rolled back to " << *dir << " (step " << to << "), skipping the next "
         << job_.train.rollback_skip_batches << " batches (train.nan_policy=rollback; rollback "
         << rollbacks_ << " of at most " << max << ")\n";
    out_.flush();
    return to;
}

}  // namespace meshlm

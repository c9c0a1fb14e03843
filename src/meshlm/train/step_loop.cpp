#include "meshlm/train/step_loop.h"

#include <csignal>
#include <ostream>

#include "meshlm/core/launch_command.h"
#include "meshlm/core/trace.h"
#include "meshlm/parallel/fault.h"
#include "meshlm/parallel/rank_activity.h"
#include "meshlm/train/trace_files.h"

namespace meshlm {

bool StepLoop::run(TrainResult& result) {
    const TrainConfig& tc = p_.job.train;
    Comm& world = p_.meshes.world();
    const int dp_rank = p_.meshes.host().data_comm().rank();
    const bool chunked = p_.batches.chunks() > 1;
    train_start_ = interval_start_ = Clock::now();
    for (long step = p_.progress.start_step; step < tc.steps; ++step) {
        const TracedStep traced(p_.job.log.profile_steps, step + 1);
        // Staged sequence-length warmup: shorter rows, more of them, same tokens per step.
        const StepShape shape = p_.batches.fill(step, p_.progress.batch_offset);
        if (chunked && p_.batches.starts_batch(step)) p_.learner.reset_vq_carry();
        set_activity_step(step + 1);
        set_activity_phase("training step");
        fault_point(world.rank(), "train_step", step + 1);
        p_.meshes.reset_bytes_sent();
        // Dropout masks follow each row's place in the global batch (this rank's rows come
        // after those of the ranks before it), so any data-parallel layout drops alike.
        p_.learner.set_dropout(tc.seed, static_cast<std::int64_t>(dp_rank) * shape.rows);
        Probes probes;
        probes.coord = tc.coord_interval > 0 && (step + 1) % tc.coord_interval == 0;
        if (probes.coord) p_.learner.record_coord_check();
        probes.diag = diag_.due(step + 1);
        if (probes.diag) p_.learner.record_diagnostics();
        const StepStats st =
            p_.learner.train_step(p_.batches.tokens(), p_.batches.targets(), tc.grad_accum,
                                  shape.rows, chunked ? p_.batches.chunk_len() : shape.len);
        const std::uint64_t bytes = p_.meshes.bytes_sent();
        if (!st.applied) {
            if (const auto back = p_.bad_steps.on_bad_step(step + 1, st)) {
                step = *back - 1;  // rolled back: the loop goes on after the checkpoint's step
                interval_start_ = Clock::now(), interval_tokens_ = 0;
                continue;
            }
        }
        const std::uint64_t tokens = p_.batches.tokens_per_step();
        interval_tokens_ += static_cast<long>(tokens);
        p_.progress.tokens_seen += tokens;
        result.final_loss = st.loss;
        p_.checkpoints.average().after_step(step + 1);
        if (!after_step(step + 1, st, shape.len, bytes, probes, result)) {
            result.interrupted = true;
            return false;
        }
    }
    return true;
}

bool StepLoop::after_step(long done, const StepStats& st, int len, std::uint64_t bytes,
                          Probes probes, TrainResult& result) {
    const TrainJob& job = p_.job;
    const TrainConfig& tc = job.train;
    const bool last = done == tc.steps;
    const bool log_now = done % job.log.interval == 0 || last || !st.applied;
    const bool eval_now =
        !job.data.synthetic &&
        ((job.log.eval_interval > 0 && done % job.log.eval_interval == 0) || last);
    const bool ckpt_due = p_.checkpoints.due(done);
    StepMetrics m;
    m.step = done;
    if (!st.applied) m.fault = step_fault_name(p_.bad_steps.fault());
    if (p_.bad_steps.skipped() > 0) m.skipped_steps = p_.bad_steps.skipped();
    if (probes.coord) coord_check_metrics(p_.learner, p_.meshes.world(), m);
    if (probes.diag && st.applied)
        diag_.add_metrics(p_.learner.diagnostics(), p_.learner.layout(), st.grad_norm,
                          p_.meshes.world(), m);
    if (log_now) log_step(done, m, st, len, bytes);
    std::optional<double> val_now;
    if (eval_now) {
        const EvalResult ev = last ? evaluate(p_.final_eval_batches, "final evaluation")
                                   : evaluate(tc.eval_batches, "evaluation");
        const float val = static_cast<float>(ev.loss());
        m.val_loss = val;
        val_now = val;
        result.final_val_loss = val;
        p_.report.sinks().validation(m, ev.bits_per_byte(), tc.steps);
    }
    if (log_now || eval_now || probes.coord || probes.diag) {
        p_.out.flush();
        p_.report.record(m, p_.progress.tokens_seen);
    }
    if (stop_requested(done)) return false;
    if (ckpt_due)
        p_.checkpoints.at_due_step(done, val_now,
                                   [&] { return evaluate(tc.eval_batches, "evaluation").loss(); });
    if (log_now || eval_now || ckpt_due) {
        p_.out.flush();
        interval_start_ = Clock::now();
        interval_tokens_ = 0;
    }
    return true;
}

// The step's line: its training values, the time elapsed since this process started training
// and the ETA of what is left, evaluations and checkpoints included.
void StepLoop::log_step(long done, StepMetrics& m, const StepStats& st, int len,
                        std::uint64_t bytes) {
    const TrainConfig& tc = p_.job.train;
    if (tc.seq_warmup_steps > 0) m.seq_len = len;
    const auto now = Clock::now();
    p_.report.train_values(m, st, std::chrono::duration<double>(now - interval_start_).count(),
                           interval_tokens_, bytes);
    StepContext ctx;
    ctx.total_steps = tc.steps;
    ctx.ranks = p_.meshes.world().size();
    ctx.elapsed = std::chrono::duration<double>(now - train_start_).count();
    ctx.eta =
        p_.eta.eta(ctx.elapsed, done - p_.progress.start_step, remaining_work(p_.schedule, done));
    p_.report.sinks().train_line(m, ctx);
}

// A validation pass, timed for the ETA.
EvalResult StepLoop::evaluate(long max_batches, const char* what) {
    const auto t0 = Clock::now();
    EvalResult r = p_.validation.run(max_batches, p_.batches.tokens(), p_.batches.targets(), what);
    p_.eta.add_evaluation(p_.validation.batches(max_batches),
                          std::chrono::duration<double>(Clock::now() - t0).count());
    return r;
}

// Every rank stops after the same step (the signal may reach them at different times); with
// chunks (model.vq.update_len) only at the end of a batch: the carried state is not
// checkpointed. A stop writes a checkpoint and says how to resume.
bool StepLoop::stop_requested(long done) {
    Comm& world = p_.meshes.world();
    std::int32_t stop_now = stop_.requested() && done % p_.batches.chunks() == 0;
    if (world.size() > 1) world.all_reduce_max(&stop_now, 1);
    if (!stop_now) return false;
    p_.out << "received "
           << (!stop_.requested()         ? "a stop signal on another rank"
               : stop_.signal() == SIGINT ? "SIGINT"
                                          : "SIGTERM")
           << ": stopping after step " << done << "\n";
    p_.checkpoints.save(done, true);
    write_trace_files(world, p_.job.run_dir, p_.job.log.profile_steps, p_.out);
    // The same launch, with this binary's real path (any launch resumes it; this one
    // continues exactly).
    p_.out << "resume with: "
           << relaunch_command(world.size(), "train --resume " + shell_quote(p_.job.run_dir))
           << "\n";
    p_.out.flush();
    return true;
}

}  // namespace meshlm

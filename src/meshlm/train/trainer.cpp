// run_training: the parts of a run in order. Each part is a file of train/ with one job:
// train_meshes (ranks and device), training_threads, run_dir_setup (resume target, ownership,
// the directory), train_data (tokenizer and prepared data), run_progress (first weights),
// start_banner, validation, final_eval_size, step_batches, step_report (sinks), run_eta,
// checkpoint_policy, bad_steps, step_loop and run_end (final weights and sample).
#include "meshlm/train/trainer.h"

#include <limits>
#include <optional>
#include <ostream>

#include "meshlm/core/error.h"
#include "meshlm/train/bad_steps.h"
#include "meshlm/train/checkpoint_policy.h"
#include "meshlm/train/final_eval_size.h"
#include "meshlm/train/run_dir_setup.h"
#include "meshlm/train/run_end.h"
#include "meshlm/train/run_owner.h"
#include "meshlm/train/run_progress.h"
#include "meshlm/train/start_banner.h"
#include "meshlm/train/step_loop.h"
#include "meshlm/train/trace_files.h"
#include "meshlm/train/train_data.h"
#include "meshlm/train/training_threads.h"

namespace meshlm {
namespace {

// A resumed run already at train.steps: nothing is trained, saved or sampled.
TrainResult nothing_to_train(const TrainJob& job, long step, std::ostream& out) {
    out << job.resume_from << " is at step " << step << " and train.steps is " << job.train.steps
        << ": nothing left to train, nothing changed (raise train.steps with "
        << "--config.train.steps=N to train on)\n";
    TrainResult result;
    result.final_val_loss = std::numeric_limits<float>::quiet_NaN();
    result.last_checkpoint = job.resume_from;
    result.nothing_to_do = true;
    return result;
}

// When the run evaluates and checkpoints, for the ETA; `final_eval_batches` as evaluate()
// takes it (0 = the whole split).
RunSchedule run_schedule(const TrainJob& job, const Validation& val, long final_eval_batches) {
    RunSchedule s;
    s.steps = job.train.steps;
    s.eval_interval = job.log.eval_interval;
    s.evaluates = !job.data.synthetic;
    s.eval_batches = val.batches(job.train.eval_batches);
    s.final_eval_batches = val.batches(final_eval_batches);
    s.checkpoint_interval = job.checkpoint.interval;
    s.only_better = job.checkpoint.only_better;
    return s;
}

}  // namespace

TrainResult run_training(const TrainJob& job, std::ostream& rank0_out) {
    const TrainConfig& tc = job.train;
    TrainMeshes meshes(job);  // the device is resolved before anything is written
    Comm& world = meshes.world();
    std::ostream silent(nullptr);
    std::ostream& out = meshes.writer() ? rank0_out : silent;
    const int threads = training_threads(tc, world, out);
    const std::optional<TrainerState> resume = read_resume_checkpoint(job);
    check_run_dir(job, resume, world);
    if (resume && resume->step >= tc.steps) return nothing_to_train(job, resume->step, out);
    const std::string run_id = resume ? resume->run_id : new_run_id();
    out << "resolved config: (every key: " << job.run_dir << "/config.yaml)\n"
        << (job.resolved_summary.empty() ? job.resolved_yaml : job.resolved_summary);
    TrainData data = open_train_data(job, world, resume ? &*resume : nullptr, out);

    const Precision precision = parse_precision(tc.precision);
    // model.vq.update_len: a batch of T-token rows trains as T / U chunks of U tokens, one
    // optimizer step each, the VQ attention state carried from chunk to chunk (the seed's
    // truncated backpropagation). Activations are planned for a chunk, not a whole row.
    const int U = job.model.chunk_len(tc.seq_len);
    const DeviceMesh& lm = meshes.learner_mesh();
    Learner learner(job.model, job.optim, tc.batch_size, U, tc.steps, &lm.data_comm(),
                    job.parallel.zero_stage, &lm.model_comm(), parse_recompute(tc.recompute),
                    precision, meshes.device());
    RunProgress progress = start_weights(job, resume, learner, meshes.host(), out);
    WeightAverage average(tc, job.model, meshes.host(), learner);  // train.average
    if (resume) out << average.restore(job.resume_from);
    // Inputs are valid: only now does the run directory appear.
    if (meshes.writer()) create_run_dir(job, resume.has_value(), out);

    Comm& dp = meshes.host().data_comm();
    Validation validation(job, data, learner, dp, out);
    const MfuBasis mfu = print_start_banner(job, learner, meshes, threads, precision, out);
    StepBatches batches(job, U, data.loader.get(), dp.rank(), dp.size());
    // The final evaluation sized to the run; said when it scores less than the whole split.
    const FinalEvalSize final_eval =
        final_eval_size(tc, job.log, batches.tokens_per_step() * tc.steps,
                        validation.batch_tokens(), validation.split_batches());
    if (!job.data.synthetic && !final_eval.note.empty()) out << final_eval.note << "\n";
    const RunSchedule schedule = run_schedule(job, validation, final_eval.batches);
    out << "run directory: " << job.run_dir << "\n";
    out.flush();

    StepReporter report(job, meshes.writer(), resume ? progress.start_step : -1, mfu, world.size(),
                        out);
    if (batches.chunks() > 1) {
        learner.set_vq_carry(true);
        MESHLM_CHECK(progress.start_step % batches.chunks() == 0, "resuming at step ",
                     progress.start_step, ": with model.vq.update_len the run resumes at a ",
                     "multiple of ", batches.chunks());
    }
    RunEta eta(static_cast<double>(validation.batch_tokens()) /
                   static_cast<double>(batches.tokens_per_step()),
               CheckpointPolicy::bytes_estimate(job, learner));
    CheckpointPolicy checkpoints(job, meshes.host(), learner, data, progress, run_id, eta, average,
                                 out);
    BadSteps bad_steps(job, meshes.host(), learner, data, batches, progress, checkpoints, report,
                       out);
    StepLoop loop({job, meshes, learner, batches, validation, checkpoints, bad_steps, report,
                   progress, eta, schedule, final_eval.batches, out});
    TrainResult result;
    result.final_val_loss = std::numeric_limits<float>::quiet_NaN();
    const bool finished = loop.run(result);
    if (finished) write_trace_files(world, job.run_dir, job.log.profile_steps, out);
    result.last_checkpoint = checkpoints.last_checkpoint();
    if (finished)
        finish_run(job, meshes.host(), learner, average, *data.tokenizer, report.sinks(), out);
    return result;
}

}  // namespace meshlm

#include "meshlm/train/run_progress.h"

#include <ostream>

#include "meshlm/core/error.h"
#include "meshlm/io/init_from.h"
#include "meshlm/train/progress.h"
#include "meshlm/train/sharded_checkpoint.h"

namespace meshlm {

RunProgress start_weights(const TrainJob& job, const std::optional<TrainerState>& resume,
                          Learner& learner, const DeviceMesh& mesh, std::ostream& out) {
    RunProgress p;
    if (resume) {
        const bool own_shards =
            load_learner_checkpoint(job.resume_from, *resume, job.model, learner, mesh);
        if (learner.step() != resume->step)
            MESHLM_INVALID(job.resume_from, ": optimizer step ", learner.step(),
                           " differs from trainer.json's step ", resume->step);
        p.start_step = resume->step;
        p.tokens_seen = resume->tokens_seen;
        p.best_val = resume->best_val;
        p.batch_offset = resume->batch_offset;
        p.last_saved = resume->step;
        out << "resuming from " << job.resume_from << " (step " << p.start_step << ", "
            << human_count(static_cast<double>(p.tokens_seen)) << " tokens seen"
            << (own_shards ? "; each rank read its own shard" : "") << ")\n";
    } else if (!job.model.init_from.empty()) {
        const std::string from = load_init_weights(
            job.model.init_from, job.model, learner.full_layout(), learner.full_params_buffer());
        learner.full_params_written();
        out << "initialized weights from " << from << " (fresh optimizer and schedule)\n";
    } else {
        learner.init_params(job.train.seed);
    }
    return p;
}

}  // namespace meshlm

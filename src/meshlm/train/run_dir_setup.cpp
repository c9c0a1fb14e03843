#include "meshlm/train/run_dir_setup.h"

#include <filesystem>
#include <ostream>

#include "meshlm/core/atomic_file.h"
#include "meshlm/core/error.h"
#include "meshlm/io/run_files.h"
#include "meshlm/parallel/fault.h"
#include "meshlm/train/all_ranks.h"
#include "meshlm/train/run_owner.h"

namespace meshlm {

std::optional<TrainerState> read_resume_checkpoint(const TrainJob& job) {
    if (job.resume_from.empty()) return std::nullopt;
    TrainerState resume = read_checkpoint(job.resume_from);
    if (resume.seed != job.train.seed)
        MESHLM_INVALID("train.seed is ", job.train.seed, " but the checkpoint ", job.resume_from,
                       " was trained with seed ", resume.seed,
                       "; an exact resume needs the same seed");
    return resume;
}

void check_run_dir(const TrainJob& job, const std::optional<TrainerState>& resume, Comm& world) {
    std::optional<std::string> refused;
    if (world.rank() == 0)
        refused = capture([&] {
            if (resume)
                check_resume_target(job.run_dir, job.resume_from, resume->run_id);
            else if (!job.replace_run)
                check_run_dir_free(job.run_dir, job.model.init_from);
        });
    fault_point(world.rank(), "train_start");
    throw_if_any_failed(world, refused, "");
}

void create_run_dir(const TrainJob& job, bool resumed, std::ostream& out) {
    namespace fs = std::filesystem;
    if (!resumed && job.replace_run && holds_run(job.run_dir)) {
        if (job.restart_run)
            out << "checkpoint.resume=auto: " << job.run_dir
                << " holds this run, stopped before its first checkpoint: starting it again "
                   "(its old files are removed)"
                << std::endl;  // a preempted job's log keeps this line even if killed again
        else
            out << "--force: removing the run in " << job.run_dir << "\n";
        remove_run(job.run_dir);
    }
    fs::create_directories(job.run_dir);
    if (job.on_run_dir) job.on_run_dir(job.run_dir, resumed);
    write_file_atomic(job.run_dir + "/config.yaml", job.resolved_yaml);
    if (fs::is_regular_file(job.data.tokenizer)) {
        const std::string copy = run_tokenizer_copy(job.run_dir, job.data.tokenizer);
        if (fs::absolute(copy) != fs::absolute(job.data.tokenizer)) {
            fs::copy_file(job.data.tokenizer, copy + ".tmp", fs::copy_options::overwrite_existing);
            fs::rename(copy + ".tmp", copy);
        }
    }
}

}  // namespace meshlm

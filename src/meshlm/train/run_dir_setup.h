// The run directory at the start of training, in the order a run needs it: the checkpoint to
// resume verified, the directory checked (it belongs to this run: run_owner.h) before anything
// is written, and created once every input is valid.
//
// exports: read_resume_checkpoint, check_run_dir, create_run_dir
#pragma once

#include <iosfwd>
#include <optional>

#include "meshlm/io/checkpoint.h"
#include "meshlm/parallel/comm.h"
#include "meshlm/train/trainer.h"

namespace meshlm {

// job.resume_from's state, verified (sizes, checksums) and trained with train.seed; nullopt for
// a fresh run. Throws InvalidInput naming the seeds when they differ.
std::optional<TrainerState> read_resume_checkpoint(const TrainJob& job);

// Whether job.run_dir may be written: rank 0 looks (the others could look only after it has
// begun writing) and every rank throws its verdict. Collective over `world`.
void check_run_dir(const TrainJob& job, const std::optional<TrainerState>& resume, Comm& world);

// Rank 0, once the inputs are valid: removes the run the directory holds when asked to
// (--force, or checkpoint.resume=auto restarting a run without a checkpoint), creates it, calls
// job.on_run_dir, writes config.yaml and a copy of a tokenizer file.
void create_run_dir(const TrainJob& job, bool resumed, std::ostream& out);

}  // namespace meshlm

// A run directory belongs to one run. A fresh `meshlm train` refuses a directory that already
// holds a run (its config, metrics, weights or checkpoints) before anything is written, unless
// told to replace it (--force), which removes the old run's files first. Every checkpoint
// records the id of the run that wrote it (trainer.json "run_id"); a resumed run keeps that id,
// and rotation deletes only checkpoints carrying it.
//
// exports: holds_run, holds_final_weights, check_run_dir_free, check_resume_target, remove_run,
// new_run_id
#pragma once

#include <string>

namespace meshlm {

// True when `dir` holds what `meshlm train` writes: config.yaml, metrics.jsonl,
// model.safetensors (or its shards) or checkpoints/.
bool holds_run(const std::string& dir);

// True when `dir` holds a run's final weights (model.safetensors or its index): it finished.
bool holds_final_weights(const std::string& dir);

// For a fresh run into `dir`: throws InvalidInput naming `dir` and the ways on (--resume,
// checkpoint.resume=auto, another log.dir, --force) when it holds a run. `init_from` (may be
// empty) must not lie inside `dir`: a warm start never writes into the run it starts from.
void check_run_dir_free(const std::string& dir, const std::string& init_from);

// For a resume of `checkpoint` (run id `run_id`) continuing in `dir`: `dir` is the run
// directory holding the checkpoint, an empty or new directory, or one whose latest checkpoint
// belongs to the same run. Throws InvalidInput otherwise.
void check_resume_target(const std::string& dir, const std::string& checkpoint,
                         const std::string& run_id);

// --force (and checkpoint.resume=auto restarting a run that has no checkpoint yet): removes the
// run files of `dir` (those holds_run looks for, and the tokenizer copy is overwritten later);
// other files stay. config.yaml goes last, so a removal cut short still names its run.
void remove_run(const std::string& dir);

// A fresh random run id (16 hex digits).
std::string new_run_id();

}  // namespace meshlm

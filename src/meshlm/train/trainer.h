// `meshlm train`: builds the data, the model and the optimizer from resolved settings, trains
// with periodic logging and validation, and leaves a self-contained run directory:
//   config.yaml (the resolved config), metrics.jsonl, train.log, tb/ (log.tensorboard),
//   model.safetensors (final weights) and checkpoints/ (see checkpoint.h). A run resumed from a
//   checkpoint continues bitwise exactly.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>

#include "meshlm/data/data_config.h"
#include "meshlm/data/tokenizer.h"
#include "meshlm/io/checkpoint_config.h"
#include "meshlm/model/model_config.h"
#include "meshlm/optim/optim_config.h"
#include "meshlm/parallel/comm.h"
#include "meshlm/parallel/parallel_config.h"
#include "meshlm/train/train_config.h"

namespace meshlm {

struct TrainJob {
    ModelConfig model;
    DataConfig data;
    TrainConfig train;
    OptimConfig optim;
    LogConfig log;
    CheckpointConfig checkpoint;
    ParallelConfig parallel;
    // Every rank of the job (outliving the run); nullptr = one process. Only world rank 0
    // prints to `out` and writes the run directory.
    Comm* world = nullptr;
    std::string run_dir;        // resolved log.dir
    std::string resume_from;    // a checkpoint directory to continue from; empty = a fresh run
    std::string resolved_yaml;  // saved as RUN_DIR/config.yaml
    // Printed at the start: the settings a reader looks for first, with the values used.
    std::string resolved_summary;
    // --force: a fresh run may replace the run run_dir holds (removed first); otherwise a run
    // directory that holds a run is refused (run_owner.h).
    bool replace_run = false;
    // checkpoint.resume=auto found this run (same model and optimizer) stopped before its first
    // checkpoint: it starts again, replacing those files (replace_run is set too).
    bool restart_run = false;
    // Called with the final parameters (layout of transformer_layout) once they are saved; the CLI
    // makes a sample with it (sampling lives above this layer), which the run's sinks report
    // (the console shows "sample:" and the text).
    std::function<std::string(const float* params, const Tokenizer& tok)> on_finish;
    // Called on rank 0 once the run directory exists (`resumed`: it continues a run there); the
    // CLI starts RUN_DIR/train.log with it.
    std::function<void(const std::string& run_dir, bool resumed)> on_run_dir;
};

struct TrainResult {
    float final_loss = 0;         // last step's training loss
    float final_val_loss = 0;     // validation loss at the end (NaN with synthetic data)
    bool interrupted = false;     // stopped early by SIGINT / SIGTERM (a checkpoint was written)
    std::string last_checkpoint;  // the newest checkpoint written, if any
    bool nothing_to_do = false;   // resumed at or past train.steps: nothing was written
};

TrainResult run_training(const TrainJob& job, std::ostream& out);

}  // namespace meshlm

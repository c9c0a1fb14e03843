// Checkpoints: RUN_DIR/checkpoints/step_<N>/ holding
//   model.safetensors      parameters by registry name (HF-style shards + index above a size)
//   optimizer.safetensors  AdamW moments ("exp_avg.<name>", "exp_avg_sq.<name>") and "step"
//   config.yaml            the run's resolved config (so a checkpoint opens like a run dir)
//   trainer.json           step, tokens seen, data loader state, RNG scheme, best validation
//                          loss, the resolved config, meshlm's version, size + CRC-32 per file
// A checkpoint is written into a temporary directory, synced, renamed into place, and only then
// is RUN_DIR/checkpoints/latest (a one-line text file naming the directory) replaced, so a crash
// at any moment leaves the previous checkpoint and pointer intact.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "meshlm/model/param_layout.h"
#include "meshlm/optim/adamw.h"
#include "meshlm/train/checkpoint_config.h"

namespace meshlm {

// Everything besides tensors that an exact resume needs.
struct TrainerState {
    long step = 0;                   // optimizer steps done
    std::uint64_t tokens_seen = 0;   // training tokens consumed (all micro-batches)
    nlohmann::json loader;           // DataLoader::state(); null with synthetic data
    std::uint64_t seed = 0;          // train.seed: batches of step s draw Philox(seed, s)
    std::optional<double> best_val;  // best validation loss so far (checkpoint.only_better)
    std::string config_yaml;         // the run's resolved config
};

// Writes step_<state.step> under run_dir/checkpoints, points `latest` at it and applies the
// rotation of `cfg`. Returns the checkpoint directory.
std::string write_checkpoint(const std::string& run_dir, const TrainerState& state,
                             const ParamLayout& layout, const float* params, AdamW& optim,
                             const CheckpointConfig& cfg);

// The checkpoint `latest` points at in run_dir/checkpoints, if any.
std::optional<std::string> latest_checkpoint(const std::string& run_dir);

// A checkpoint directory (holds trainer.json), or a run directory meaning its latest
// checkpoint. Throws InvalidInput saying what `path` is missing.
std::string resolve_checkpoint(const std::string& path);

// Reads trainer.json and verifies every file it lists (size and CRC-32) before anything is used.
TrainerState read_checkpoint(const std::string& dir);

// The run directory a checkpoint directory belongs to (RUN_DIR of RUN_DIR/checkpoints/step_N).
std::string checkpoint_run_dir(const std::string& checkpoint_dir);

// Load tensors of a verified checkpoint, checking names, shapes and dtypes first.
void load_checkpoint_model(const std::string& dir, const ParamLayout& layout, float* params);
void load_checkpoint_optimizer(const std::string& dir, const ParamLayout& layout, AdamW& optim);

// Checkpoint directories under run_dir/checkpoints, oldest first, as (step, path).
std::vector<std::pair<long, std::string>> list_checkpoints(const std::string& run_dir);

}  // namespace meshlm

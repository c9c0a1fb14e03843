// Checkpoints: RUN_DIR/checkpoints/step_<N>/ in one of two formats.
// Single-file (version 1; what one process writes):
//   model.safetensors      parameters by registry name (HF-style shards + index above a size)
//   optimizer.safetensors  the optimizer's state per tensor and "step": AdamW "exp_avg.<name>"
//                          and "exp_avg_sq.<name>", Lion "exp_avg.<name>", Adafactor
//                          "exp_avg_sq.<name>" of its unfactored tensors and
//                          "exp_avg_sq_row.<name>" [rows], "exp_avg_sq_col.<name>" [cols]
//                          of its factored ones
// Sharded (version 2; what a multi-rank run writes, see shard_format.h):
//   shard-d<d>-m<m>.safetensors  each rank's chunk of its local flat buffers
//   layout.json                  the manifest of the (data, model, ZeRO) layout and the files
// and in both:
//   config.yaml            the run's resolved config (so a checkpoint opens like a run dir)
//   trainer.json           step, tokens seen, data loader state, RNG scheme, best validation
//                          loss, the resolved config, meshlm's version, size + CRC-32 per file
//                          (and, sharded, the layout)
// A checkpoint is written into a staging directory, synced, renamed into place, and only then
// is RUN_DIR/checkpoints/latest (a one-line text file naming the directory) replaced, so a crash
// at any moment leaves the previous checkpoint and pointer intact. Both formats share these
// steps (stage_checkpoint, publish_checkpoint).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "meshlm/core/param_layout.h"
#include "meshlm/core/state_tensor.h"
#include "meshlm/io/checkpoint_config.h"
#include "meshlm/model/model_config.h"

namespace meshlm {

inline constexpr int kSingleFileCheckpointVersion = 1;
inline constexpr int kShardedCheckpointVersion = 2;

// Everything besides tensors that an exact resume needs.
struct TrainerState {
    long step = 0;                  // optimizer steps done
    std::uint64_t tokens_seen = 0;  // training tokens consumed (all micro-batches)
    nlohmann::json loader;          // DataLoader::state(); null with synthetic data
    std::uint64_t seed = 0;         // train.seed: batches of step s draw Philox(seed, s)
    // Synthetic data after rollbacks (train.nan_policy): batches of step s draw
    // Philox(seed, s + batch_offset). 0 = none (and not written to trainer.json).
    long batch_offset = 0;
    std::optional<double> best_val;  // best validation loss so far (checkpoint.only_better)
    std::string config_yaml;         // the run's resolved config
    // The run that wrote the checkpoint (run_owner.h); rotation deletes only checkpoints of the
    // same run. Empty in checkpoints written before runs had ids.
    std::string run_id;
    // Read back: trainer.json's "layout" for a sharded checkpoint, null for a single-file one.
    nlohmann::json layout;
    bool sharded() const { return !layout.is_null(); }
};

// The whole training state in the single-process layout (transformer_layout): what a checkpoint of
// any format holds, and what `meshlm reshard` moves between formats.
struct FullTrainingState {
    std::vector<float> params, m, v;  // transformer_layout(model).total() floats each; m and v
                                      // empty where the optimizer keeps no such slot
    std::vector<StateTensor> stat_tensors;  // whole-tensor optimizer statistics (Adafactor's
    std::vector<float> stats;               // factored ones), in one buffer
    long step = 0;                          // optimizer steps taken
};

// Writes step_<state.step> in the single-file format under run_dir/checkpoints, points `latest`
// at it and applies the rotation of `cfg`. Returns the checkpoint directory.
// m or v null: the optimizer keeps no such slot; `stats` holds `stat_tensors`.
std::string write_checkpoint(const std::string& run_dir, const TrainerState& state,
                             const ParamLayout& layout, const float* params, const float* m,
                             const float* v, long optim_step, const CheckpointConfig& cfg,
                             const std::vector<StateTensor>& stat_tensors = {},
                             const float* stats = nullptr);

// The steps every checkpoint writer shares. stage_checkpoint removes leftovers of killed
// writes under run_dir/checkpoints and creates the empty staging directory for `step`, whose
// path (checkpoint_staging_path) is fixed so that every rank of a job knows it.
std::string checkpoint_staging_path(const std::string& run_dir, long step);
std::string stage_checkpoint(const std::string& run_dir, long step);
// Size and CRC-32 of a file, as trainer.json lists them: {"bytes": N, "crc32": "hex"}.
nlohmann::json file_record(const std::string& path);
// Completes a staged checkpoint: adds config.yaml, writes trainer.json (state, `files` name ->
// file_record plus config.yaml's, `version`, and `layout` unless null), syncs, renames the
// staging directory to step_<N>, replaces `latest` and rotates. Returns the final directory.
std::string publish_checkpoint(const std::string& run_dir, const std::string& staging,
                               const TrainerState& state, nlohmann::json files, int version,
                               const nlohmann::json& layout, const CheckpointConfig& cfg);

// The run id trainer.json in `dir` records ("" when none); nullopt when it is unreadable.
std::optional<std::string> checkpoint_run_id(const std::string& dir);

// A JSON file of a checkpoint; throws InvalidInput naming it when missing or not JSON.
nlohmann::json read_checkpoint_json(const std::string& path);

// Whether `path` is a checkpoint directory (it holds trainer.json; read_checkpoint verifies it).
bool is_checkpoint_dir(const std::string& path);

// The checkpoint `latest` points at in run_dir/checkpoints, if any.
std::optional<std::string> latest_checkpoint(const std::string& run_dir);

// A checkpoint directory (holds trainer.json), or a run directory meaning its latest
// checkpoint. Throws InvalidInput saying what `path` is missing.
std::string resolve_checkpoint(const std::string& path);

// Reads trainer.json and verifies every file it lists before anything is used: size and
// CRC-32, except the shard files of a sharded checkpoint, whose sizes are checked here and
// CRC-32s when they are read (a rank resuming at the same layout reads only its own).
TrainerState read_checkpoint(const std::string& dir);

// The run directory a checkpoint directory belongs to (RUN_DIR of RUN_DIR/checkpoints/step_N).
std::string checkpoint_run_dir(const std::string& checkpoint_dir);

// Loads the weights of a checkpoint of either format, verified by read_checkpoint, into params, in
// the single-process layout transformer_layout(model), checking names, shapes and sizes first.
void load_checkpoint_model(const std::string& dir, const ModelConfig& model, float* params);
// Loads the whole training state of a verified checkpoint of either format into buffers of
// transformer_layout(model).total() floats (m or v null: not read) and `stats` (the tensors
// `stat_tensors` lists); returns the optimizer step. (For a given optimizer's slots and
// statistics: read_full_state, train/full_state.h.)
long load_checkpoint_state(const std::string& dir, const ModelConfig& model, float* params,
                           float* m, float* v, const std::vector<StateTensor>& stat_tensors = {},
                           float* stats = nullptr);

// Checkpoint directories under run_dir/checkpoints, oldest first, as (step, path).
// (Rotation considers only those whose trainer.json records the writer's run id.)
std::vector<std::pair<long, std::string>> list_checkpoints(const std::string& run_dir);

}  // namespace meshlm

// The files of a sharded checkpoint (format version 2), without any communication: what rank
// (d, m) of a (data D x model M) mesh holds, its shard file, the manifest, and the moves
// between shards and the single-process layout.
//
// Rank (d, m) holds model rank m's local layout (transformer_layout(cfg, M)),
// cut by ZeRO over the D data ranks into chunks of `chunk` floats (parallel/zero_plan.h): its
// shard is [d * chunk, min((d + 1) * chunk, local total)) of the local parameters and the
// optimizer's flat slots. The cut depends only on D and the local total, not on the ZeRO stage,
// so a checkpoint resumes at the same (data, model) with any stage by reading one file per rank.
//   shard-d<d>-m<m>.safetensors  f32 [count] `params` and the optimizer's slots (AdamW
//                                `exp_avg`, `exp_avg_sq`; Lion `exp_avg`; Adafactor
//                                `exp_avg_sq`); Adafactor's factored statistics, the same in
//                                every shard (`exp_avg_sq_row.<name>`, `exp_avg_sq_col.<name>`);
//                                i32 [1] `step`; metadata data_index, model_index, begin, count
//   layout.json                  data, model, zero_stage, chunk, local_total, the model shapes,
//                                per model rank its local slices (name, shape, offset, split),
//                                per file its indices, begin, count, bytes and CRC-32
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "meshlm/core/param_layout.h"
#include "meshlm/io/checkpoint.h"
#include "meshlm/model/model_config.h"

namespace meshlm {

struct ShardGeometry {
    // Throws InvalidInput when the model does not split over `model` ranks.
    ShardGeometry(const ModelConfig& cfg, int data, int model, int zero_stage);
    int data, model, zero_stage;
    ParamLayout local;  // every model rank's local layout (same shapes on each)
    std::size_t chunk;  // floats per data rank (zero_chunk(local.total(), data))
    std::size_t begin(int d) const { return chunk * static_cast<std::size_t>(d); }
    std::size_t count(int d) const;  // real floats of data rank d's chunk (may be 0)
};

// One shard file as the manifest and trainer.json list it.
struct ShardFile {
    int data_index = 0, model_index = 0;
    std::size_t begin = 0, count = 0;
    std::string name;  // relative to the checkpoint directory
    std::uint64_t bytes = 0;
    std::uint32_t crc32 = 0;
};

std::string shard_file_name(int data_index, int model_index);

// Writes (atomically, synced) rank (d, m)'s shard: `count` floats of each buffer (m or v null:
// the optimizer keeps no such slot) and the statistics `stats` laid out as `stat_tensors`.
ShardFile write_shard_file(const std::string& dir, const ShardGeometry& g, int data_index,
                           int model_index, const float* params, const float* m, const float* v,
                           long step, const std::vector<StateTensor>& stat_tensors = {},
                           const float* stats = nullptr);
// Writes layout.json into dir; returns trainer.json's "layout" (a summary naming it) and, in
// `files`, every file's record for trainer.json's "files" (layout.json included).
nlohmann::json write_shard_manifest(const std::string& dir, const ModelConfig& cfg,
                                    const ShardGeometry& g, const std::vector<ShardFile>& shards,
                                    nlohmann::json& files);

struct ShardManifest {
    ShardGeometry geometry;
    std::vector<ShardFile> files;  // in world-rank order: index d * model + m
    const ShardFile& file(int d, int m) const {
        return files[static_cast<std::size_t>(d) * geometry.model + m];
    }
};

// Reads dir/layout.json and checks it against the layouts recomputed from `cfg` and against
// trainer.json's file records (`trainer_files`): every slice, the chunk, every file present
// once with the expected begin and count. Errors name the file and what differs.
ShardManifest read_shard_manifest(const std::string& dir, const ModelConfig& cfg,
                                  const nlohmann::json& trainer_files);

// The manifest of a sharded checkpoint that read_checkpoint verified (read_shard_manifest
// against its trainer.json); nullopt for a single-file checkpoint.
std::optional<ShardManifest> checkpoint_manifest(const std::string& dir, const ModelConfig& cfg);

struct ShardChunk {
    std::vector<float> params, m, v;  // `count` floats each; m, v empty when not in the file
    std::vector<float> stats;         // the statistics asked for
    long step = 0;
};
// Reads one shard after checking its size and CRC-32 against the manifest, then its tensors'
// names, dtypes and shapes and its metadata, and the statistics `stat_tensors`.
ShardChunk read_shard_file(const std::string& dir, const ShardManifest& manifest, int data_index,
                           int model_index, const std::vector<StateTensor>& stat_tensors = {});

// Every shard into buffers of the single-process layout (transformer_layout(cfg).total() floats);
// m and v may be nullptr (weights only, or a slot the optimizer does not keep), `stats` receives
// `stat_tensors` (from the first shard: every shard holds them). Returns the optimizer step (the
// same in every shard).
long assemble_shards(const std::string& dir, const ShardManifest& manifest, const ModelConfig& cfg,
                     float* params, float* m, float* v,
                     const std::vector<StateTensor>& stat_tensors = {}, float* stats = nullptr);

// Writes a full state as the shard files and layout.json of layout `g` into dir (the staging
// directory of a checkpoint); returns trainer.json's "layout" and fills `files` as
// write_shard_manifest does.
nlohmann::json write_shards_from_full(const std::string& dir, const ModelConfig& cfg,
                                      const ShardGeometry& g, const FullTrainingState& full,
                                      nlohmann::json& files);

}  // namespace meshlm

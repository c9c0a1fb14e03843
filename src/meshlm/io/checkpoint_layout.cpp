#include "meshlm/io/checkpoint_layout.h"

#include "meshlm/io/shard_format.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm {

std::string write_checkpoint_for_layout(const std::string& run_dir, const TrainerState& state,
                                        const ModelConfig& model, const FullTrainingState& full,
                                        int data, int model_ranks, int zero_stage,
                                        const CheckpointConfig& cfg) {
    const ShardGeometry g(model, data, model_ranks, zero_stage);  // validates the layout
    if (data * model_ranks == 1)
        return write_checkpoint(run_dir, state, transformer_layout(model), full.params.data(),
                                full.m.empty() ? nullptr : full.m.data(),
                                full.v.empty() ? nullptr : full.v.data(), full.step, cfg,
                                full.stat_tensors, full.stats.data());
    const std::string tmp = stage_checkpoint(run_dir, state.step);
    nlohmann::json files = nlohmann::json::object();
    const nlohmann::json layout = write_shards_from_full(tmp, model, g, full, files);
    return publish_checkpoint(run_dir, tmp, state, files, kShardedCheckpointVersion, layout, cfg);
}

}  // namespace meshlm

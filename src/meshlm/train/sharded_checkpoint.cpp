#include "meshlm/train/sharded_checkpoint.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/io/shard_format.h"
#include "meshlm/parallel/fault.h"
#include "meshlm/train/all_ranks.h"

namespace fs = std::filesystem;

namespace meshlm {

std::string write_sharded_checkpoint(const DeviceMesh& mesh, Learner& learner,
                                     const ModelConfig& model, int zero_stage,
                                     const std::string& run_dir, const TrainerState& state,
                                     const CheckpointConfig& cfg) {
    Comm& world = mesh.world();
    const bool root = world.rank() == 0;
    const int d = mesh.data_index(), m = mesh.model_index();
    const std::string tmp = checkpoint_staging_path(run_dir, state.step);
    auto remove_staging = [&] {
        std::error_code ec;
        if (root) fs::remove_all(tmp, ec);
    };
    const std::string what = "writing the checkpoint of step " + std::to_string(state.step);
    std::optional<std::string> err;
    if (root) err = capture([&] { stage_checkpoint(run_dir, state.step); });
    // Also the barrier after which the staging directory exists for every rank.
    throw_if_any_failed(world, err, what);

    const ShardGeometry g(model, mesh.data_size(), mesh.model_size(), zero_stage);
    ShardFile mine;
    err = capture([&] {
        fault_point(world.rank(), "checkpoint_shard", state.step);
        const Learner::LocalChunk c = learner.local_chunk();
        MESHLM_CHECK(c.begin == g.begin(d) && c.count == g.count(d), "rank (", d, ", ", m,
                     ") holds [", c.begin, ", +", c.count, ") but the layout says [", g.begin(d),
                     ", +", g.count(d), ")");
        mine = write_shard_file(tmp, g, d, m, c.params, c.m, c.v, learner.step(),
                                learner.optimizer().stat_tensors(), c.stats);
    });
    throw_if_any_failed(world, err, what, remove_staging);

    // Rank 0 learns every file's size and CRC-32 (world rank = d * model + m).
    std::vector<std::int64_t> rec(static_cast<std::size_t>(world.size()) * 2);
    rec[2 * world.rank()] = static_cast<std::int64_t>(mine.bytes);
    rec[2 * world.rank() + 1] = mine.crc32;
    world.all_gather(rec.data(), 2);
    std::string final_dir;
    if (root)
        err = capture([&] {
            std::vector<ShardFile> shards;
            for (int r = 0; r < world.size(); ++r) {
                ShardFile f;
                f.data_index = r / g.model, f.model_index = r % g.model;
                f.begin = g.begin(f.data_index), f.count = g.count(f.data_index);
                f.name = shard_file_name(f.data_index, f.model_index);
                f.bytes = static_cast<std::uint64_t>(rec[2 * r]);
                f.crc32 = static_cast<std::uint32_t>(rec[2 * r + 1]);
                shards.push_back(f);
            }
            nlohmann::json files = nlohmann::json::object();
            const nlohmann::json layout = write_shard_manifest(tmp, model, g, shards, files);
            final_dir = publish_checkpoint(run_dir, tmp, state, files, kShardedCheckpointVersion,
                                           layout, cfg);
        });
    // No rank goes on before the checkpoint exists (or the job fails).
    throw_if_any_failed(world, err, what, remove_staging);
    return root ? final_dir : run_dir + "/checkpoints/step_" + std::to_string(state.step);
}

bool load_learner_checkpoint(const std::string& dir, const TrainerState& state,
                             const ModelConfig& model, Learner& learner, const DeviceMesh& mesh) {
    if (state.sharded() && state.layout.at("data") == mesh.data_size() &&
        state.layout.at("model") == mesh.model_size()) {
        // This rank's chunk is exactly its shard: read only that file.
        ShardChunk c;
        const auto err = capture([&] {
            const std::optional<ShardManifest> man = checkpoint_manifest(dir, model);
            MESHLM_CHECK(man && man->geometry.local.total() == learner.layout().total() &&
                             man->geometry.chunk == learner.plan().chunk,
                         "the manifest's layout differs from the learner's");
            c = read_shard_file(dir, *man, mesh.data_index(), mesh.model_index(),
                                learner.optimizer().stat_tensors());
        });
        throw_if_any_failed(mesh.world(), err, "");
        auto data = [](std::vector<float>& x) { return x.empty() ? nullptr : x.data(); };
        learner.load_local_chunk(c.params.data(), data(c.m), data(c.v), data(c.stats), c.step);
        return true;
    }
    // Another layout or the single-file format: the single-process layout, of which each rank
    // keeps its shard and chunk.
    auto full = learner.make_full_optimizer();
    const long step = load_checkpoint_state(dir, model, learner.full_params_buffer(), full->m(),
                                            full->v(), full->stat_tensors(), full->stats());
    learner.full_params_written();
    full->set_steps_taken(step);
    learner.load_optimizer(*full);
    return false;
}

}  // namespace meshlm

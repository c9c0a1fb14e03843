#include "meshlm/train/final_weights.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/io/safetensors_parts.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"
#include "meshlm/parallel/tp_shard.h"
#include "meshlm/train/all_ranks.h"

namespace meshlm {

void write_final_weights(const DeviceMesh& mesh, Learner& learner, const ModelConfig& model,
                         const std::string& path,
                         const std::map<std::string, std::string>& metadata) {
    const Learner::LocalChunk c = learner.local_chunk();
    write_final_weights(mesh, learner.layout(), c.params, c.begin, c.count, model, path, metadata);
}

void write_final_weights(const DeviceMesh& mesh, const ParamLayout& local, const float* chunk,
                         std::size_t begin, std::size_t count, const ModelConfig& model,
                         const std::string& path,
                         const std::map<std::string, std::string>& metadata) {
    Comm& world = mesh.world();
    const ParamLayout full = transformer_layout(model);
    std::vector<SafetensorsTensor> tensors;
    for (const ParamSlice& s : full.slices()) tensors.push_back({s.name, DType::f32, s.shape, {}});
    const SafetensorsPlan plan = plan_safetensors(tensors, metadata);
    auto remove_tmp = [&] {
        if (world.rank() == 0) discard_safetensors_parts(path);
    };
    const std::string what = "writing " + path;

    std::optional<std::string> err;
    if (world.rank() == 0) err = capture([&] { create_safetensors_parts(path, plan); });
    throw_if_any_failed(world, err, what, remove_tmp);  // also: the file exists for every rank

    err = capture([&] {
        const int M = mesh.model_size(), m = mesh.model_index();
        SafetensorsPartWriter f(path, plan);
        for (std::size_t i = 0; i < full.slices().size(); ++i) {
            const ParamSlice &fs_ = full.slices()[i], &ls = local.slices()[i];
            const bool replicated = M == 1 || fs_.split == TpSplit::replicated;
            if (replicated && m != 0) continue;  // every model rank holds the same values
            auto piece = [&](std::size_t full_at, std::size_t local_at, std::size_t n) {
                // The part of this piece inside the rank's chunk of its local buffer.
                const std::size_t lo = ls.offset + local_at;
                const std::size_t a = std::max(lo, begin), b = std::min(lo + n, begin + count);
                if (a >= b) return;
                f.write_f32(i, full_at + (a - lo), chunk + (a - begin), b - a);
            };
            if (replicated)
                piece(0, 0, fs_.numel);
            else
                tp_for_each_piece(fs_, M, m, piece);
        }
        f.sync();
    });
    throw_if_any_failed(world, err, what, remove_tmp);

    if (world.rank() == 0) err = capture([&] { publish_safetensors_parts(path); });
    throw_if_any_failed(world, err, what, remove_tmp);
}

}  // namespace meshlm

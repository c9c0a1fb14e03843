// checkpoint_fixture.h: two small checkpoints written by the product's writers.
#include "checkpoint_fixture.h"

#include <vector>

#include "fuzz_util.h"
#include "meshlm/io/checkpoint.h"
#include "meshlm/io/shard_format.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm::fuzz {
namespace {

ModelConfig tiny_model() {
    ModelConfig c;
    c.n_layer = 1;
    c.d_model = 8;
    c.n_head = 2;
    c.vocab_size = 16;
    c.max_seq_len = 8;
    return c;
}

TrainerState tiny_state() {
    TrainerState st;
    st.step = 3;
    st.tokens_seen = 96;
    st.seed = 5;
    st.best_val = 2.5;
    st.config_yaml = "model:\n  n_layer: 1\n";
    st.run_id = "fuzz-fixture";
    st.loader = {{"version", 1}, {"packing", "concat"}, {"seq_len", 8},
                 {"seed", 0},    {"shuffle", true},     {"units", 10},
                 {"epoch", 0},   {"position", 3},       {"offset", 0}};
    return st;
}

FullTrainingState ramp_state(std::size_t n) {
    FullTrainingState full;
    full.params.resize(n);
    full.m.resize(n);
    full.v.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        full.params[i] = 0.01f * static_cast<float>(i % 97);
        full.m[i] = 0.001f * static_cast<float>(i % 13);
        full.v[i] = 0.0001f * static_cast<float>(i % 7);
    }
    full.step = 3;
    return full;
}

}  // namespace

const CheckpointFixture& checkpoint_fixture() {
    static const CheckpointFixture fx = [] {
        CheckpointFixture f;
        f.model = tiny_model();
        const ParamLayout layout = transformer_layout(f.model);
        const FullTrainingState full = ramp_state(layout.total());
        const TrainerState st = tiny_state();
        const CheckpointConfig cc;
        f.single_dir = write_checkpoint(scratch_dir() + "/single", st, layout, full.params.data(),
                                        full.m.data(), full.v.data(), full.step, cc);
        const std::string run = scratch_dir() + "/sharded";
        const std::string staging = stage_checkpoint(run, st.step);
        nlohmann::json files = nlohmann::json::object();
        const ShardGeometry g(f.model, 2, 1, 1);
        const nlohmann::json summary = write_shards_from_full(staging, f.model, g, full, files);
        f.sharded_files = files;
        f.sharded_dir =
            publish_checkpoint(run, staging, st, files, kShardedCheckpointVersion, summary, cc);
        return f;
    }();
    return fx;
}

}  // namespace meshlm::fuzz

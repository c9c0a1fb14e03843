// Checkpoints for the trainer_json and layout_json fuzz targets, written once per process by the
// product's own writers under fuzz::scratch_dir(): a single-file checkpoint (write_checkpoint)
// and a sharded one of 2 data ranks (write_shards_from_full + publish_checkpoint), both of one
// tiny model at step 3 with a fixed run id, so their trainer.json and layout.json are the same
// bytes every time (fuzz/corpus/{trainer_json,layout_json} hold them as seeds).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "meshlm/model/model_config.h"

namespace meshlm::fuzz {

struct CheckpointFixture {
    ModelConfig model;
    std::string single_dir;        // .../checkpoints/step_3 of the single-file run
    std::string sharded_dir;       // .../checkpoints/step_3 of the sharded run
    nlohmann::json sharded_files;  // the sharded trainer.json's "files"
};

const CheckpointFixture& checkpoint_fixture();

}  // namespace meshlm::fuzz

// Fuzz target: a sharded checkpoint's layout.json (io/shard_format.h read_shard_manifest:
// geometry, chunk, every model rank's slices, every shard file's indices, range, size and CRC-32)
// checked against the tiny model and trainer.json's file records of checkpoint_fixture.h, then
// every shard assembled into the single-process layout. Seed: the fixture's own layout.json.
#include <filesystem>
#include <vector>

#include "checkpoint_fixture.h"
#include "fuzz_util.h"
#include "meshlm/io/shard_format.h"
#include "meshlm/model/transformer_layout.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace meshlm;
    const fuzz::CheckpointFixture& fx = fuzz::checkpoint_fixture();
    const std::string rel = std::filesystem::relative(fx.sharded_dir, fuzz::scratch_dir()).string();
    fuzz::write_input(rel + "/layout.json", fuzz::text(data, size));
    fuzz::guard([&] {
        const ShardManifest manifest =
            read_shard_manifest(fx.sharded_dir, fx.model, fx.sharded_files);
        std::vector<float> params(transformer_layout(fx.model).total());
        (void)assemble_shards(fx.sharded_dir, manifest, fx.model, params.data(), nullptr, nullptr);
    });
    return 0;
}

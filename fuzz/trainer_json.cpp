// Fuzz target: a checkpoint's trainer.json (io/checkpoint.h read_checkpoint: format, version,
// the files with their sizes and CRC-32s, step, loader state, RNG, best loss, config, run id), as
// a resume reads it, then the weights and optimizer state it points at (read_full_state). The
// input replaces trainer.json in one of the two checkpoints of checkpoint_fixture.h: the sharded
// one when the input mentions "layout", else the single-file one. Seeds: their own trainer.json.
#include <filesystem>

#include "checkpoint_fixture.h"
#include "fuzz_util.h"
#include "meshlm/io/checkpoint.h"
#include "meshlm/train/full_state.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace meshlm;
    const fuzz::CheckpointFixture& fx = fuzz::checkpoint_fixture();
    const std::string_view in = fuzz::text(data, size);
    const std::string& dir =
        in.find("\"layout\"") != std::string_view::npos ? fx.sharded_dir : fx.single_dir;
    const std::string rel = std::filesystem::relative(dir, fuzz::scratch_dir()).string();
    fuzz::write_input(rel + "/trainer.json", in);
    fuzz::guard([&] {
        const TrainerState st = read_checkpoint(dir);
        (void)checkpoint_run_id(dir);
        (void)read_full_state(dir, fx.model);
        (void)st.sharded();
    });
    return 0;
}

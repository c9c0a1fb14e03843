// Fuzz target: the sharded layout's model.safetensors.index.json (io/safetensors_set.h
// SafetensorsSet): its JSON, the weight_map's file names and the check of every shard against
// it. The three shards of tests/fixtures/hf_llama_tiny_sharded are copied next to the fuzzed
// index once, so the fixture's own index (the seed) opens and every tensor is read.
#include <filesystem>

#include "fuzz_util.h"
#include "meshlm/io/safetensors_set.h"

namespace {

const std::string& shard_dir() {
    namespace fs = std::filesystem;
    static const std::string dir = [] {
        const std::string d = meshlm::fuzz::scratch_dir() + "/sharded";
        fs::create_directories(d);
        const fs::path src = fs::path(MESHLM_SOURCE_DIR) / "tests/fixtures/hf_llama_tiny_sharded";
        for (const auto& e : fs::directory_iterator(src))
            if (e.path().extension() == ".safetensors")
                fs::copy_file(e.path(), d / e.path().filename(),
                              fs::copy_options::overwrite_existing);
        return d;
    }();
    return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace meshlm;
    const std::string& dir = shard_dir();
    fuzz::guard([&] {
        fuzz::write_input("sharded/model.safetensors.index.json", fuzz::text(data, size));
        const SafetensorsSet set(dir);
        for (const auto& name : set.names()) {
            (void)set.file_of(name);
            (void)set.f32(name);
        }
    });
    return 0;
}

// Fuzz target: one safetensors file (io/safetensors.h SafetensorsFile): the 8-byte header length,
// the JSON header (dtypes, shapes, data_offsets, __metadata__) and the data section, then every
// tensor read back as the loaders read it. Seeds: the .safetensors fixtures of tests/fixtures.
#include "meshlm/io/safetensors.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace meshlm;
    fuzz::guard([&] {
        const SafetensorsFile f(fuzz::write_input("model.safetensors", fuzz::text(data, size)));
        for (const auto& name : f.names()) {
            const SafetensorsEntry& e = f.entry(name);
            if (e.dtype == DType::f32) (void)f.f32(name, &e.shape);
            if (e.dtype == DType::i32) (void)f.i32(name);
            (void)f.data(name);
        }
        (void)f.metadata();
    });
    return 0;
}

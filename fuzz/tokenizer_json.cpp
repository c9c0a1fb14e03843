// Fuzz target: a Hugging Face tokenizer.json, through the loader that picks the format from the
// path (data/tokenizer.h make_tokenizer), then a probe text encoded and decoded and every id
// decoded. Seeds: the tokenizer.json files of tests/fixtures/tokenizers.
#include "fuzz_util.h"
#include "tokenizer_probe.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    meshlm::fuzz::guard([&] {
        meshlm::fuzz::probe_tokenizer(
            meshlm::fuzz::write_input("tokenizer.json", meshlm::fuzz::text(data, size)));
    });
    return 0;
}

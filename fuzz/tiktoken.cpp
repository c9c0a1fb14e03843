// Fuzz target: a .tiktoken rank file (base64 token, rank per line) through make_tokenizer
// (data/tokenizer.h), then the probe of tokenizer_probe.h. Seed: the first ranks of
// tests/fixtures/tokenizers/gpt2.tiktoken.
#include "fuzz_util.h"
#include "tokenizer_probe.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    meshlm::fuzz::guard([&] {
        meshlm::fuzz::probe_tokenizer(
            meshlm::fuzz::write_input("ranks.tiktoken", meshlm::fuzz::text(data, size)));
    });
    return 0;
}

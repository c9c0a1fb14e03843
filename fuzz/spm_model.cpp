// Fuzz target: a SentencePiece .model (a protobuf) through make_tokenizer (data/tokenizer.h ->
// SpmTokenizer::from_file), then the probe of tokenizer_probe.h. Seeds: small models trained by
// `meshlm train-tokenizer --type spm-*` on tests/fixtures/tokenizers/corpus.txt.
#include "fuzz_util.h"
#include "tokenizer_probe.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    meshlm::fuzz::guard([&] {
        meshlm::fuzz::probe_tokenizer(
            meshlm::fuzz::write_input("spm.model", meshlm::fuzz::text(data, size)));
    });
    return 0;
}

// Fuzz target: a token shard (data/shard.h ShardReader: magic, version, token width, vocabulary,
// counts, document index, file size) opened by a DataLoader and read in both packings
// (loader_probe.h). Seeds: shards written by `meshlm prepare` from
// tests/fixtures/tokenizers/corpus.txt with the byte tokenizer (2-byte tokens) and a
// tokenizer.json fixture.
#include "fuzz_util.h"
#include "loader_probe.h"
#include "meshlm/data/shard.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace meshlm;
    fuzz::guard([&] {
        const std::string path = fuzz::write_input("train_000000.bin", fuzz::text(data, size));
        {
            const ShardReader r(path);
            for (std::uint64_t d = 0; d <= r.documents() && d < 64; ++d) (void)r.doc_offset(d);
        }
        fuzz::probe_loader([&](const LoaderOptions& opt) {
            return std::make_unique<DataLoader>(std::vector<std::string>{path}, opt);
        });
    });
    return 0;
}

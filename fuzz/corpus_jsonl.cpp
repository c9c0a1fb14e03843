// Fuzz target: the JSONL corpus reader (data/corpus_reader.h CorpusReader): one record per line,
// the "text" field, gzip and zstd recognised by their magic bytes, once refusing and once
// skipping malformed lines (--skip-bad-lines). Seeds: JSONL made from the text fixtures of
// tests/fixtures/tokenizers, plain, gzip and zstd.
#include "fuzz_util.h"
#include "meshlm/data/corpus_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace meshlm;
    const std::string path = fuzz::write_input("corpus.jsonl", fuzz::text(data, size));
    for (const bool skip : {false, true})
        fuzz::guard([&] {
            CorpusReadOptions opt;
            opt.skip_bad_lines = skip;
            CorpusReader reader({path}, opt);
            std::string doc;
            while (reader.next(doc)) {
            }
            (void)reader.stats();
            (void)reader.input_bytes_done();
        });
    return 0;
}

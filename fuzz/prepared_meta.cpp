// Fuzz target: a prepared data directory's meta.json (data/prepare.h read_prepared_meta) as
// training opens it: DataLoader::open_split checks each split's shards against it, then
// loader_probe.h reads batches. The shards are those `prepare_corpus` writes once from
// tests/fixtures/tokenizers/bpe_train_corpus.txt (separator %, byte tokenizer, val 0.25, seed
// 1234), so the seed (meta.json of `meshlm prepare` with the same options) opens them.
#include "fuzz_util.h"
#include "loader_probe.h"
#include "meshlm/data/prepare.h"

namespace {

const std::string& prepared_dir() {
    static const std::string dir = [] {
        const std::string d = meshlm::fuzz::scratch_dir() + "/prepared";
        meshlm::PrepareOptions opt;
        opt.val_fraction = 0.25;
        opt.read.separator = "%";
        opt.threads = 1;
        opt.progress = false;
        meshlm::prepare_corpus(
            {std::string(MESHLM_SOURCE_DIR) + "/tests/fixtures/tokenizers/bpe_train_corpus.txt"},
            opt, meshlm::ByteTokenizer(), d);
        return d;
    }();
    return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace meshlm;
    const std::string& dir = prepared_dir();
    fuzz::guard([&] {
        fuzz::write_input("prepared/meta.json", fuzz::text(data, size));
        for (const char* split : {"train", "val", "test"})
            fuzz::probe_loader(
                [&](const LoaderOptions& opt) { return DataLoader::open_split(dir, split, opt); });
    });
    return 0;
}

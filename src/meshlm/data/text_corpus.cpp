#include "meshlm/data/text_corpus.h"

#include <algorithm>
#include <filesystem>

#include "meshlm/core/error.h"
#include "meshlm/data/corpus_reader.h"

namespace fs = std::filesystem;

namespace meshlm {
std::vector<std::string> read_documents(const std::string& path, const std::string& separator) {
    std::error_code ec;
    if (!fs::exists(path, ec))
        MESHLM_INVALID("data.path '", path, "' does not exist",
                       path == DataConfig{}.path
                           ? " (the default corpus is Debian's fortunes: apt-get install fortunes, "
                             "or run scripts/setup.sh)"
                           : "");
    CorpusReadOptions opt;
    opt.format = CorpusFormat::Text;
    opt.separator = separator;
    CorpusReader reader({path}, opt);
    std::vector<std::string> docs;
    for (std::string doc; reader.next(doc);) docs.push_back(std::move(doc));
    return docs;
}

Corpus build_corpus(const DataConfig& cfg, const Tokenizer& tok) {
    std::vector<std::string> docs = read_documents(cfg.path, cfg.separator);
    if (docs.size() < 2)
        MESHLM_INVALID("data.path '", cfg.path, "' has ", docs.size(),
                       " document; need at least 2 to split train and validation");
    // Fisher-Yates with a counter-based RNG: the split depends only on data.split_seed.
    std::vector<std::size_t> order(docs.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    Philox rng(static_cast<std::uint64_t>(cfg.split_seed), 0x5B117);
    for (std::size_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
    std::size_t n_val =
        std::max<std::size_t>(1, static_cast<std::size_t>(docs.size() * cfg.val_fraction));
    Corpus c;
    for (std::size_t i = 0; i < order.size(); ++i) {
        const std::string& d = docs[order[i]];
        auto& stream = i < n_val ? c.val : c.train;
        auto ids = tok.encode(d);
        stream.insert(stream.end(), ids.begin(), ids.end());
        stream.push_back(tok.eot_id());
        c.bytes += d.size();
        (i < n_val ? c.val_docs : c.train_docs)++;
    }
    return c;
}

void sample_windows(const std::vector<std::int32_t>& stream, int B, int T, Philox& rng,
                    std::int32_t* tokens, std::int32_t* targets) {
    MESHLM_CHECK(stream.size() > static_cast<std::size_t>(T) + 1, "stream of ", stream.size(),
                 " tokens is shorter than a window of ", T + 1);
    const std::size_t starts = stream.size() - T;
    for (int b = 0; b < B; ++b) {
        std::size_t s = rng.below(starts);
        std::copy_n(stream.begin() + s, T, tokens + b * T);
        std::copy_n(stream.begin() + s + 1, T, targets + b * T);
    }
}

void random_tokens(int B, int T, int V, Philox& rng, std::int32_t* tokens, std::int32_t* targets) {
    for (int b = 0; b < B; ++b) {
        std::int32_t prev = static_cast<std::int32_t>(rng.below(V));
        for (int t = 0; t < T; ++t) {
            std::int32_t next = static_cast<std::int32_t>(rng.below(V));
            tokens[b * T + t] = prev;
            targets[b * T + t] = next;
            prev = next;
        }
    }
}

std::size_t window_count(const std::vector<std::int32_t>& stream, int T) {
    return stream.size() > static_cast<std::size_t>(T) ? (stream.size() - 1) / T : 0;
}

void fill_window(const std::vector<std::int32_t>& stream, std::size_t w, int T,
                 std::int32_t* tokens, std::int32_t* targets) {
    std::size_t s = w * T;
    std::copy_n(stream.begin() + s, T, tokens);
    std::copy_n(stream.begin() + s + 1, T, targets);
}

}  // namespace meshlm

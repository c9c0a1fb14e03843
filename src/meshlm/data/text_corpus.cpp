#include "meshlm/data/text_corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "meshlm/core/error.h"

namespace fs = std::filesystem;

namespace meshlm {
namespace {

void split_documents(const std::string& text, const std::string& separator,
                     std::vector<std::string>& docs) {
    std::string doc;
    std::size_t pos = 0;
    auto flush = [&] {
        if (doc.find_first_not_of(" \t\r\n") != std::string::npos) docs.push_back(doc);
        doc.clear();
    };
    while (pos < text.size()) {
        std::size_t nl = text.find('\n', pos);
        std::size_t end = nl == std::string::npos ? text.size() : nl + 1;
        std::string_view line(text.data() + pos,
                              (nl == std::string::npos ? text.size() : nl) - pos);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line == separator)
            flush();
        else
            doc.append(text, pos, end - pos);
        pos = end;
    }
    flush();
}

}  // namespace

std::vector<std::string> read_documents(const std::string& path, const std::string& separator) {
    std::error_code ec;
    if (!fs::exists(path, ec))
        MESHLM_INVALID("data.path '", path, "' does not exist",
                       path == DataConfig{}.path
                           ? " (the default corpus is Debian's fortunes: apt-get install fortunes, "
                             "or run scripts/setup.sh)"
                           : "");
    std::vector<fs::path> files;
    if (fs::is_directory(path)) {
        for (const auto& e : fs::recursive_directory_iterator(path))
            if (e.is_regular_file()) files.push_back(e.path());
        std::sort(files.begin(), files.end());
    } else {
        files.push_back(path);
    }
    std::set<fs::path> seen;
    std::vector<std::string> docs;
    for (const auto& f : files) {
        if (!seen.insert(fs::canonical(f)).second) continue;
        std::ifstream in(f, std::ios::binary);
        if (!in) MESHLM_INVALID("cannot read ", f.string());
        std::ostringstream ss;
        ss << in.rdbuf();
        std::string text = ss.str();
        if (text.find('\0') != std::string::npos) continue;
        split_documents(text, separator, docs);
    }
    if (docs.empty())
        MESHLM_INVALID("data.path '", path, "' holds no text documents (", files.size(),
                       " files read)");
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

#include "meshlm/data/bpe_trainer.h"

#include <omp.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <queue>
#include <set>

#include "meshlm/core/error.h"
#include "meshlm/data/pretokenize.h"

namespace meshlm {

namespace {

// GPT-2's bytes_to_unicode (HF ByteLevel): printable bytes map to themselves, the other 68 to
// U+0100.. in increasing byte order.
char32_t byte_char(int b) {
    static const auto table = [] {
        std::vector<char32_t> t(256);
        int n = 0;
        for (int c = 0; c < 256; ++c) {
            const bool printable = (c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174;
            t[c] = printable ? static_cast<char32_t>(c) : static_cast<char32_t>(256 + n++);
        }
        return t;
    }();
    return table[b];
}

void append_utf8(std::string& s, char32_t cp) {
    if (cp < 0x80) {
        s.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        s.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

// Raw bytes -> their ByteLevel string (the form tokenizer.json stores).
std::string bytelevel(std::string_view bytes) {
    std::string s;
    for (unsigned char b : bytes) append_utf8(s, byte_char(b));
    return s;
}

std::uint64_t pair_key(std::int32_t l, std::int32_t r) {
    return (std::uint64_t(std::uint32_t(l)) << 32) | std::uint32_t(r);
}

struct HeapEntry {
    std::int64_t count;
    std::uint64_t key;
    // Max-heap order: higher count first, then the smaller (left, right) pair.
    bool operator<(const HeapEntry& o) const {
        return count != o.count ? count < o.count : key > o.key;
    }
};

// Ids 0..S-1 for the special tokens, then the 256 bytes in ByteLevel character order (a 1-byte
// special keeps its id). Returns raw bytes -> id, specials included; byte_id[b] is b's id.
std::unordered_map<std::string, std::int32_t> initial_vocab(BpeModel& m,
                                                            std::int32_t (&byte_id)[256]) {
    std::unordered_map<std::string, std::int32_t> ids;
    for (const auto& s : m.special_tokens) {
        ids.emplace(s, static_cast<std::int32_t>(m.tokens.size()));
        m.tokens.push_back(s);
    }
    std::vector<int> order(256);
    for (int b = 0; b < 256; ++b) order[b] = b;
    std::sort(order.begin(), order.end(), [](int a, int b) { return byte_char(a) < byte_char(b); });
    for (int b : order) {
        const std::string s(1, static_cast<char>(b));
        byte_id[b] = static_cast<std::int32_t>(m.tokens.size());
        if (!ids.emplace(s, byte_id[b]).second)
            byte_id[b] = ids[s];  // a 1-byte special
        else
            m.tokens.push_back(s);
    }
    return ids;
}

// The id of l's and r's tokens merged: a new token, or the one the string is already.
std::int32_t merged_token(BpeModel& m, std::unordered_map<std::string, std::int32_t>& ids,
                          std::int32_t l, std::int32_t r) {
    std::string merged = m.tokens[l] + m.tokens[r];
    if (auto it = ids.find(merged); it != ids.end())
        return it->second;  // the string is a token already: reuse its id (as HF does)
    const auto n = static_cast<std::int32_t>(m.tokens.size());
    ids.emplace(merged, n);
    m.tokens.push_back(std::move(merged));
    return n;
}

// The merge loop's state: the words as token ids with their frequencies, the pair counts with
// the words that may hold each pair, and the max-heap over the counts.
struct MergeState {
    std::vector<std::vector<std::int32_t>> words;
    std::vector<std::int64_t> freq;
    std::unordered_map<std::uint64_t, std::int64_t> counts;
    std::unordered_map<std::uint64_t, std::vector<std::int32_t>> where;
    std::priority_queue<HeapEntry> heap;
    std::vector<std::uint32_t> stamp;  // word -> the last merge that visited it
    std::unordered_map<std::uint64_t, std::int64_t> delta;  // one merge's count changes

    // Words in byte order, so that everything below is independent of hash-map iteration.
    MergeState(const std::unordered_map<std::string, std::uint64_t>& word_counts,
               const std::int32_t (&byte_id)[256]) {
        std::vector<const std::pair<const std::string, std::uint64_t>*> sorted;
        sorted.reserve(word_counts.size());
        for (const auto& wc : word_counts) sorted.push_back(&wc);
        std::sort(sorted.begin(), sorted.end(),
                  [](auto* a, auto* b) { return a->first < b->first; });
        words.resize(sorted.size());
        freq.resize(sorted.size());
        for (std::size_t w = 0; w < sorted.size(); ++w) {
            const std::string& s = sorted[w]->first;
            freq[w] = static_cast<std::int64_t>(sorted[w]->second);
            auto& sym = words[w];
            sym.reserve(s.size());
            for (unsigned char b : s) sym.push_back(byte_id[b]);
            for (std::size_t i = 0; i + 1 < sym.size(); ++i) {
                const auto k = pair_key(sym[i], sym[i + 1]);
                counts[k] += freq[w];
                auto& v = where[k];
                if (v.empty() || v.back() != static_cast<std::int32_t>(w))
                    v.push_back(static_cast<std::int32_t>(w));
            }
        }
        std::vector<HeapEntry> init;
        init.reserve(counts.size());
        for (const auto& [k, c] : counts) init.push_back({c, k});
        heap = std::priority_queue<HeapEntry>(std::less<HeapEntry>{}, std::move(init));
        stamp.assign(words.size(), 0);
    }

    // Rewrites every word holding the pair `key` = (l, r) with n in its place, the count deltas
    // of the neighbouring pairs collected in `delta`; mark is the merge's number.
    void rewrite_words(std::uint64_t key, std::int32_t l, std::int32_t r, std::int32_t n,
                       std::uint32_t mark) {
        std::vector<std::int32_t> holders = std::move(where[key]);
        where.erase(key);
        delta.clear();
        for (const std::int32_t w : holders) {
            if (stamp[w] == mark) continue;
            stamp[w] = mark;
            auto& s = words[w];
            const std::int64_t c = freq[w];
            const auto add = [&](std::int32_t a, std::int32_t b, std::int64_t d) {
                const auto k = pair_key(a, b);
                delta[k] += d;
                if (d > 0) {
                    auto& v = where[k];
                    if (v.empty() || v.back() != w) v.push_back(w);
                }
            };
            std::size_t j = 0;
            const std::size_t len = s.size();
            for (std::size_t i = 0; i < len;) {
                if (i + 1 < len && s[i] == l && s[i + 1] == r) {
                    if (j > 0) {
                        add(s[j - 1], l, -c);
                        add(s[j - 1], n, c);
                    }
                    if (i + 2 < len) {
                        add(r, s[i + 2], -c);
                        add(n, s[i + 2], c);
                    }
                    s[j++] = n;
                    i += 2;
                } else {
                    s[j++] = s[i++];
                }
            }
            s.resize(j);
        }
    }

    // Drops the merged pair and applies `delta`: every pair whose count grew gets a heap entry.
    void apply_deltas(std::uint64_t key) {
        counts.erase(key);  // every occurrence was merged
        for (const auto& [k, d] : delta) {
            if (k == key || d == 0) continue;
            auto& c = counts[k];
            c += d;
            if (d > 0) heap.push({c, k});
            if (c <= 0) counts.erase(k);
        }
    }
};

}  // namespace

BpeTrainer::BpeTrainer(BpeTrainOptions opt) : opt_(std::move(opt)) {
    std::set<std::string> seen;
    for (const auto& s : opt_.special_tokens) {
        if (s.empty()) MESHLM_INVALID("special tokens must not be empty");
        if (!seen.insert(s).second) MESHLM_INVALID("special token '", s, "' given twice");
    }
    const int min_vocab = 256 + static_cast<int>(opt_.special_tokens.size());
    if (opt_.vocab_size < min_vocab)
        MESHLM_INVALID("--vocab-size ", opt_.vocab_size, " is too small for byte-level BPE: it ",
                       "needs at least 256 bytes + ", opt_.special_tokens.size(),
                       " special tokens = ", min_vocab);
}

void BpeTrainer::add_documents(const std::vector<std::string>& docs) {
    const int nt = opt_.threads > 0 ? opt_.threads : omp_get_max_threads();
    std::vector<std::unordered_map<std::string, std::uint64_t>> local(nt);
#pragma omp parallel num_threads(nt)
    {
        auto& counts = local[omp_get_thread_num()];
#pragma omp for schedule(dynamic, 16)
        for (std::size_t d = 0; d < docs.size(); ++d)
            gpt2_pretokenize(docs[d], [&](std::string_view piece) {
                auto it = counts.find(std::string(piece));
                if (it == counts.end())
                    counts.emplace(std::string(piece), 1);
                else
                    ++it->second;
            });
    }
    for (auto& counts : local)  // sums: the result does not depend on the thread count
        for (auto& [w, c] : counts) word_counts_[w] += c;
}

BpeModel BpeTrainer::train(const std::function<void(std::size_t, std::size_t)>& progress) const {
    BpeModel m;
    m.special_tokens = opt_.special_tokens;
    std::int32_t byte_id[256];
    auto ids = initial_vocab(m, byte_id);  // raw bytes -> id (specials included)
    MergeState st(word_counts_, byte_id);

    const std::size_t wanted = static_cast<std::size_t>(opt_.vocab_size) - m.tokens.size();
    const std::int64_t min_count = std::max<std::int64_t>(1, opt_.min_frequency);
    if (progress) progress(0, wanted);
    while (m.tokens.size() < static_cast<std::size_t>(opt_.vocab_size) && !st.heap.empty()) {
        const HeapEntry top = st.heap.top();
        st.heap.pop();
        auto cit = st.counts.find(top.key);
        const std::int64_t cur = cit == st.counts.end() ? 0 : cit->second;
        if (top.count != cur) {
            // Stale: a lower count is re-queued; a higher one already has its own entry.
            if (cur > 0 && top.count > cur) st.heap.push({cur, top.key});
            continue;
        }
        if (cur < min_count) break;
        const auto l = static_cast<std::int32_t>(top.key >> 32);
        const auto r = static_cast<std::int32_t>(top.key & 0xFFFFFFFFu);
        const std::int32_t n = merged_token(m, ids, l, r);
        m.merges.emplace_back(l, r);
        st.rewrite_words(top.key, l, r, n, static_cast<std::uint32_t>(m.merges.size()));
        st.apply_deltas(top.key);
        if (progress && (m.merges.size() % 500 == 0)) progress(m.merges.size(), wanted);
    }
    if (progress) progress(m.merges.size(), wanted);
    return m;
}

std::string bpe_model_to_hf_json(const BpeModel& model) {
    using json = nlohmann::ordered_json;
    const std::size_t n_special = model.special_tokens.size();
    json added = json::array();
    for (std::size_t i = 0; i < n_special; ++i)
        added.push_back({{"id", i},
                         {"content", model.special_tokens[i]},
                         {"single_word", false},
                         {"lstrip", false},
                         {"rstrip", false},
                         {"normalized", false},
                         {"special", true}});
    json vocab = json::object();
    for (std::size_t i = 0; i < model.tokens.size(); ++i)
        vocab[i < n_special ? model.tokens[i] : bytelevel(model.tokens[i])] = i;
    json merges = json::array();
    for (const auto& [l, r] : model.merges)
        merges.push_back(json::array({bytelevel(model.tokens[l]), bytelevel(model.tokens[r])}));
    const json bytelevel_cfg = {{"type", "ByteLevel"},
                                {"add_prefix_space", false},
                                {"trim_offsets", true},
                                {"use_regex", true}};
    json j = {{"version", "1.0"},
              {"truncation", nullptr},
              {"padding", nullptr},
              {"added_tokens", added},
              {"normalizer", nullptr},
              {"pre_tokenizer", bytelevel_cfg},
              {"post_processor", nullptr},
              {"decoder", bytelevel_cfg},
              {"model",
               {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"ignore_merges", false},
                {"vocab", vocab},
                {"merges", merges}}}};
    return j.dump(2) + "\n";
}

}  // namespace meshlm

#include "meshlm/data/loader.h"

#include <algorithm>
#include <sstream>

#include "meshlm/core/error.h"
#include "meshlm/core/rng.h"
#include "meshlm/core/trace.h"
#include "meshlm/data/prepare.h"

namespace meshlm {

Packing parse_packing(const std::string& s) {
    if (s == "concat") return Packing::Concat;
    if (s == "pad") return Packing::Pad;
    MESHLM_INVALID("unknown packing '", s, "'; valid: concat, pad");
}

const char* packing_name(Packing p) {
    return p == Packing::Pad ? "pad" : "concat";
}

IndexPermutation::IndexPermutation(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch)
    : n_(n), seed_(seed), epoch_(epoch), half_bits_(1) {
    while (half_bits_ < 32 && (std::uint64_t{1} << (2 * half_bits_)) < n) ++half_bits_;
}

std::uint64_t IndexPermutation::operator()(std::uint64_t i) const {
    // Balanced Feistel network on 2 * half_bits bits (a bijection of [0, 4^half_bits)); cycle
    // walking maps values >= n onward until they land in [0, n), keeping it a bijection of
    // [0, n). The domain is less than 4n, so the expected walk is under 4 steps.
    const std::uint64_t mask = (std::uint64_t{1} << half_bits_) - 1;
    const std::array<std::uint32_t, 2> key = {static_cast<std::uint32_t>(seed_),
                                              static_cast<std::uint32_t>(seed_ >> 32)};
    std::uint64_t x = i;
    do {
        std::uint64_t l = x >> half_bits_, r = x & mask;
        for (std::uint32_t round = 0; round < 6; ++round) {
            auto f = philox4x32({static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(epoch_),
                                 static_cast<std::uint32_t>(epoch_ >> 32), round},
                                key);
            std::uint64_t nl = r, nr = (l ^ f[0]) & mask;
            l = nl, r = nr;
        }
        x = (l << half_bits_) | r;
    } while (x >= n_);
    return x;
}

DataLoader::DataLoader(const std::vector<std::string>& shard_paths, LoaderOptions opt) : opt_(opt) {
    if (shard_paths.empty()) MESHLM_INVALID("no token shards to load");
    for (const auto& p : shard_paths) {
        shards_.push_back(std::make_unique<ShardReader>(p));
        const auto& s = *shards_.back();
        const auto& f = *shards_.front();
        if (s.vocab_size() != f.vocab_size() || s.eot_id() != f.eot_id() ||
            s.token_bytes() != f.token_bytes())
            MESHLM_INVALID("token shard ", p, " (vocab ", s.vocab_size(), ") does not match ",
                           f.path(), " (vocab ", f.vocab_size(), "): mixed tokenizers");
        tok_offsets_.push_back(tok_offsets_.back() + s.tokens());
        doc_offsets_.push_back(doc_offsets_.back() + s.documents());
    }
    if (opt_.pad_id < 0) opt_.pad_id = eot_id();
    if (opt_.seq_len < 1) MESHLM_INVALID("seq_len must be at least 1, got ", opt_.seq_len);
    const std::uint64_t T = static_cast<std::uint64_t>(opt_.seq_len);
    if (opt_.packing == Packing::Concat) {
        units_ = tokens() > T ? (tokens() - 1) / T : 0;
        if (units_ == 0)
            MESHLM_INVALID("token shards from ", shard_paths.front(), " hold ", tokens(),
                           " tokens: fewer than one window of seq_len + 1 = ", T + 1);
    } else {
        units_ = documents();
        bool any = false;
        for (std::uint64_t d = 0; d < units_ && !any; ++d) any = doc_length(d, nullptr) >= 2;
        if (!any)
            MESHLM_INVALID("token shards from ", shard_paths.front(),
                           " hold no document of two or more tokens");
    }
}

std::unique_ptr<DataLoader> DataLoader::open_split(const std::string& dir, const std::string& split,
                                                   LoaderOptions opt) {
    PreparedMeta m = read_prepared_meta(dir);
    auto it = m.splits.find(split);
    if (it == m.splits.end() || it->second.documents == 0)
        MESHLM_INVALID("prepared data ", dir, " has no documents in split '", split, "'");
    std::vector<std::string> paths;
    for (const auto& s : it->second.shards) paths.push_back(dir + "/" + s.file);
    auto loader = std::make_unique<DataLoader>(paths, opt);
    for (std::size_t i = 0; i < paths.size(); ++i) {
        const auto& r = *loader->shards_[i];
        const auto& s = it->second.shards[i];
        if (r.tokens() != s.tokens || r.documents() != s.documents ||
            r.vocab_size() != m.vocab_size || r.eot_id() != m.eot_id)
            MESHLM_INVALID("token shard ", paths[i], " does not match ", dir,
                           "/meta.json (it holds ", r.documents(), " documents and ", r.tokens(),
                           " tokens, meta.json says ", s.documents, " and ", s.tokens,
                           "): the directory was modified after `meshlm prepare`");
    }
    return loader;
}

void DataLoader::copy_stream(std::uint64_t begin, std::uint64_t n, std::int32_t* out) const {
    std::size_t s = std::upper_bound(tok_offsets_.begin(), tok_offsets_.end(), begin) -
                    tok_offsets_.begin() - 1;
    while (n > 0) {
        std::uint64_t local = begin - tok_offsets_[s];
        std::uint64_t take = std::min(n, shards_[s]->tokens() - local);
        shards_[s]->copy_tokens(local, take, out);
        out += take, begin += take, n -= take, ++s;
    }
}

std::uint64_t DataLoader::doc_length(std::uint64_t d, std::uint64_t* start) const {
    std::size_t s =
        std::upper_bound(doc_offsets_.begin(), doc_offsets_.end(), d) - doc_offsets_.begin() - 1;
    std::uint64_t local = d - doc_offsets_[s];
    const auto& sh = *shards_[s];
    if (start) *start = tok_offsets_[s] + sh.doc_offset(local);
    return sh.doc_offset(local + 1) - sh.doc_offset(local);
}

std::uint64_t DataLoader::unit_at(std::uint64_t position) {
    if (!opt_.shuffle) return position;
    if (!perm_) perm_ = std::make_unique<IndexPermutation>(units_, opt_.seed, epoch_);
    return (*perm_)(position);
}

std::uint64_t DataLoader::rows_left_in_epoch() const {
    const std::uint64_t started = opt_.packing == Packing::Concat && offset_ > 0 ? 1 : 0;
    return units_ - position_ - started;
}

void DataLoader::advance_unit() {
    offset_ = 0;
    if (++position_ == units_) {
        position_ = 0;
        ++epoch_;
        perm_.reset();
    }
}

void DataLoader::next_row(int T, std::int32_t* tokens, std::int32_t* targets) {
    if (opt_.packing == Packing::Concat) {
        if (offset_ + T > static_cast<std::uint64_t>(opt_.seq_len)) advance_unit();
        std::uint64_t start = unit_at(position_) * opt_.seq_len + offset_;
        offset_ += T;
        if (!tokens) return;
        copy_stream(start, T, tokens);
        copy_stream(start + 1, T, targets);
        return;
    }
    // pad: position_ is the next document; skip those too short to give a target.
    std::uint64_t d, start, len;
    for (;;) {
        d = unit_at(position_);
        advance_unit();
        if ((len = doc_length(d, &start)) >= 2) break;
    }
    if (!tokens) return;
    std::uint64_t n = std::min<std::uint64_t>(len - 1, T);
    copy_stream(start, n, tokens);
    copy_stream(start + 1, n, targets);
    std::fill(tokens + n, tokens + T, opt_.pad_id);
    std::fill(targets + n, targets + T, -1);
}

std::pair<int, int> DataLoader::rank_rows(int B, int rank, int world_size) {
    if (world_size < 1 || rank < 0 || rank >= world_size)
        MESHLM_INVALID("rank ", rank, " is not in a world of size ", world_size);
    auto at = [&](int r) {
        return static_cast<int>(static_cast<std::int64_t>(B) * r / world_size);
    };
    return {at(rank), at(rank + 1)};
}

void DataLoader::next_batch(int B, int T, std::int32_t* tokens, std::int32_t* targets, int rank,
                            int world_size) {
    TraceScope trace("data");
    if (B < 1 || T < 1) MESHLM_INVALID("batch shape B=", B, " T=", T, " must be positive");
    if (opt_.packing == Packing::Concat && T > opt_.seq_len)
        MESHLM_INVALID("T=", T, " exceeds the loader's window of seq_len=", opt_.seq_len);
    auto [begin, end] = rank_rows(B, rank, world_size);
    for (int b = 0; b < B; ++b) {
        bool mine = b >= begin && b < end;
        std::size_t row = static_cast<std::size_t>(b - begin) * T;
        next_row(T, mine ? tokens + row : nullptr, mine ? targets + row : nullptr);
    }
}

nlohmann::json DataLoader::state() const {
    return {{"version", 1},
            {"packing", packing_name(opt_.packing)},
            {"seq_len", opt_.seq_len},
            {"seed", opt_.seed},
            {"shuffle", opt_.shuffle},
            {"units", units_},
            {"epoch", epoch_},
            {"position", position_},
            {"offset", offset_}};
}

void DataLoader::restore(const nlohmann::json& s) {
    try {
        if (s.at("version").get<int>() != 1)
            MESHLM_INVALID("loader state has version ", s.at("version"), "; expected 1");
        // Each mismatch in words: which setting the saved position no longer fits.
        std::string why;
        auto differs = [&](const std::string& what, const auto& saved, const auto& now,
                           const std::string& hint) {
            std::ostringstream os;
            os << "\n  " << what << " was " << saved << " when the checkpoint was written and is "
               << now << " now" << hint;
            why += os.str();
        };
        if (s.at("packing").get<std::string>() != packing_name(opt_.packing))
            differs("data.packing", s.at("packing").get<std::string>(), packing_name(opt_.packing),
                    "");
        if (s.at("seq_len").get<int>() != opt_.seq_len)
            differs("train.seq_len", s.at("seq_len").get<int>(), opt_.seq_len,
                    " (the data is cut into windows of train.seq_len + 1 tokens)");
        if (s.at("seed").get<std::uint64_t>() != opt_.seed)
            differs("train.seed", s.at("seed").get<std::uint64_t>(), opt_.seed,
                    " (it orders the data)");
        if (s.at("shuffle").get<bool>() != opt_.shuffle)
            differs("shuffling", s.at("shuffle").get<bool>(), opt_.shuffle, "");
        // (Another window length or packing changes the count too; that is said above.)
        if (why.empty() && s.at("units").get<std::uint64_t>() != units_)
            differs(std::string("the training data's ") +
                        (opt_.packing == Packing::Pad ? "document" : "window") + " count",
                    s.at("units").get<std::uint64_t>(), units_,
                    " (data.path, its preparation or the tokenizer changed)");
        if (!why.empty())
            MESHLM_INVALID("the data loader's saved position (epoch ", s.at("epoch"), ", ",
                           s.at("position"), " of ", s.at("units"), ") does not fit this run:", why,
                           "\nresume with the settings the checkpoint was written with, or start "
                           "a new run (model.init_from keeps the weights)");
        std::uint64_t pos = s.at("position"), off = s.at("offset");
        if (pos >= units_ || off > static_cast<std::uint64_t>(opt_.seq_len))
            MESHLM_INVALID("loader state ", s.dump(), " is out of range");
        epoch_ = s.at("epoch");
        position_ = pos;
        offset_ = off;
        perm_.reset();
    } catch (const nlohmann::json::exception& e) {
        MESHLM_INVALID("malformed loader state ", s.dump(), ": ", e.what());
    }
}

}  // namespace meshlm

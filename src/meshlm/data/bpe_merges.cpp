// BPE merge table and merge loop (bpe_merges.h).
#include "meshlm/data/bpe_merges.h"

#include <climits>
#include <queue>

namespace meshlm {

namespace {

constexpr std::uint64_t kEmptyKey = ~std::uint64_t{0};
constexpr std::int32_t kNone = INT32_MAX;

std::uint64_t mix(std::uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

std::uint64_t key_of(std::int32_t left, std::int32_t right) {
    return (std::uint64_t(std::uint32_t(left)) << 32) | std::uint32_t(right);
}

}  // namespace

void BpeMerges::add(std::int32_t left, std::int32_t right, std::int32_t rank, std::int32_t merged) {
    pending_.push_back({key_of(left, right), {rank, merged}});
}

void BpeMerges::finish() {
    std::size_t cap = 16;
    while (cap < 2 * pending_.size()) cap *= 2;
    table_.assign(cap, Merge{kEmptyKey, 0, 0});
    for (const auto& [key, rm] : pending_) {
        std::size_t i = mix(key) & (cap - 1);
        while (table_[i].key != kEmptyKey && table_[i].key != key) i = (i + 1) & (cap - 1);
        table_[i] = Merge{key, rm.first, rm.second};
    }
    pending_.clear();
    pending_.shrink_to_fit();
}

const BpeMerges::Merge* BpeMerges::find(std::int32_t left, std::int32_t right) const {
    const std::uint64_t key = key_of(left, right);
    const std::size_t mask = table_.size() - 1;
    for (std::size_t i = mix(key) & mask;; i = (i + 1) & mask) {
        const Merge& m = table_[i];
        if (m.key == key) return &m;
        if (m.key == kEmptyKey) return nullptr;
    }
}

void BpeMerges::merge(std::int32_t* ids, std::size_t n, std::vector<std::int32_t>& out) const {
    if (n <= 1) {
        out.insert(out.end(), ids, ids + n);
    } else if (n <= 128) {
        merge_short(ids, n, out);
    } else {
        merge_long(ids, n, out);
    }
}

// Short words: arrays of pair ranks, linear scan for the lowest rank.
void BpeMerges::merge_short(std::int32_t* ids, std::size_t n,
                            std::vector<std::int32_t>& out) const {
    std::int32_t ranks[128], merged[128];
    std::size_t m = n;
    auto set_pair = [&](std::size_t i) {
        const Merge* mg = find(ids[i], ids[i + 1]);
        ranks[i] = mg ? mg->rank : kNone;
        merged[i] = mg ? mg->merged : -1;
    };
    for (std::size_t i = 0; i + 1 < m; ++i) set_pair(i);
    while (m > 1) {
        std::size_t best = 0;
        std::int32_t best_rank = ranks[0];
        for (std::size_t i = 1; i + 1 < m; ++i)
            if (ranks[i] < best_rank) best_rank = ranks[i], best = i;
        if (best_rank == kNone) break;
        ids[best] = merged[best];
        for (std::size_t i = best + 1; i + 1 < m; ++i) ids[i] = ids[i + 1];
        for (std::size_t i = best + 1; i + 2 < m; ++i)
            ranks[i] = ranks[i + 1], merged[i] = merged[i + 1];
        --m;
        if (best + 1 < m) set_pair(best);
        if (best > 0) set_pair(best - 1);
    }
    out.insert(out.end(), ids, ids + m);
}

// Long words: doubly linked parts and a heap of (rank, position); stale entries are recognised
// by their ids no longer being adjacent.
void BpeMerges::merge_long(std::int32_t* ids, std::size_t n, std::vector<std::int32_t>& out) const {
    struct Cand {
        std::int32_t rank;
        std::uint32_t pos;
        std::int32_t left, right, merged;
        bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::vector<std::int32_t> prev(n), next(n);
    for (std::size_t i = 0; i < n; ++i) {
        prev[i] = static_cast<std::int32_t>(i) - 1;
        next[i] = i + 1 < n ? static_cast<std::int32_t>(i + 1) : -1;
    }
    std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
    auto push = [&](std::int32_t i) {
        if (i < 0 || next[i] < 0) return;
        if (const Merge* mg = find(ids[i], ids[next[i]]))
            heap.push(
                Cand{mg->rank, static_cast<std::uint32_t>(i), ids[i], ids[next[i]], mg->merged});
    };
    for (std::size_t i = 0; i + 1 < n; ++i) push(static_cast<std::int32_t>(i));
    while (!heap.empty()) {
        const Cand c = heap.top();
        heap.pop();
        const std::int32_t i = static_cast<std::int32_t>(c.pos);
        const std::int32_t j = next[i];
        if (ids[i] != c.left || j < 0 || ids[j] != c.right) continue;  // stale
        ids[i] = c.merged;
        ids[j] = -1;
        next[i] = next[j];
        if (next[j] >= 0) prev[next[j]] = i;
        push(prev[i]);
        push(i);
    }
    for (std::int32_t i = 0; i >= 0; i = next[i]) out.push_back(ids[i]);
}

}  // namespace meshlm

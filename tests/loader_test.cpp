// The training loader: packing, determinism, exact resume, data-parallel rows, warmup shapes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "meshlm/core/error.h"
#include "meshlm/data/loader.h"
#include "meshlm/data/prepare.h"
#include "test_util.h"

using namespace meshlm;

namespace {

// A prepared directory of `docs` documents of varied lengths (byte tokenizer).
std::string prepared(const std::string& tag, int docs = 60) {
    auto dir = test::temp_dir(tag);
    std::string in;
    for (int i = 0; i < docs; ++i)
        in += "{\"text\": \"doc " + std::to_string(i) + " " + std::string(i % 17, 'a' + i % 26) +
              "\"}\n";
    std::ofstream(dir + "/in.jsonl") << in;
    ByteTokenizer tok;
    PrepareOptions opt;
    opt.progress = false;
    opt.shard_tokens = 200;  // several shards, so windows cross shard boundaries
    prepare_corpus({dir + "/in.jsonl"}, opt, tok, dir + "/out");
    return dir + "/out";
}

struct Batch {
    std::vector<std::int32_t> tokens, targets;
    bool operator==(const Batch&) const = default;
};

Batch next(DataLoader& l, int B, int T, int rank = 0, int world = 1) {
    auto [b0, b1] = DataLoader::rank_rows(B, rank, world);
    Batch b{std::vector<std::int32_t>((b1 - b0) * T), std::vector<std::int32_t>((b1 - b0) * T)};
    l.next_batch(B, T, b.tokens.data(), b.targets.data(), rank, world);
    return b;
}

LoaderOptions opts(Packing p, int seq_len, std::uint64_t seed = 7) {
    LoaderOptions o;
    o.packing = p;
    o.seq_len = seq_len;
    o.seed = seed;
    return o;
}

}  // namespace

TEST(IndexPermutation, IsABijection) {
    for (std::uint64_t n : {1ull, 2ull, 5ull, 64ull, 1000ull}) {
        IndexPermutation p(n, 42, 3);
        std::set<std::uint64_t> seen;
        for (std::uint64_t i = 0; i < n; ++i) seen.insert(p(i));
        EXPECT_EQ(seen.size(), n);
        EXPECT_LT(*seen.rbegin(), n);
    }
    IndexPermutation a(1000, 42, 0), b(1000, 42, 1);
    int same = 0;
    for (int i = 0; i < 1000; ++i) same += a(i) == b(i);
    EXPECT_LT(same, 20);  // epochs shuffle differently
}

TEST(Loader, ConcatWindowsAreContiguousStreamAndCoverEachEpoch) {
    auto dir = prepared("ld_concat");
    LoaderOptions o = opts(Packing::Concat, 16);
    o.shuffle = false;
    auto l = DataLoader::open_split(dir, "train", o);
    const std::uint64_t N = l->units_per_epoch();
    EXPECT_EQ(N, (l->tokens() - 1) / 16);
    // Unshuffled: window w is tokens [16w, 16w + 17) of the concatenated shards.
    auto first = next(*l, 2, 16);
    auto second = next(*l, 1, 16);
    for (int t = 0; t < 15; ++t) EXPECT_EQ(first.targets[t], first.tokens[t + 1]);
    EXPECT_EQ(first.targets[15], first.tokens[16]);
    EXPECT_EQ(first.targets[31], second.tokens[0]);
    // Shuffled: one epoch visits every window once.
    auto s = DataLoader::open_split(dir, "train", opts(Packing::Concat, 16));
    std::set<std::vector<std::int32_t>> windows;
    for (std::uint64_t i = 0; i < N; ++i) windows.insert(next(*s, 1, 16).tokens);
    EXPECT_EQ(s->epoch(), 0u);
    next(*s, 1, 16);
    EXPECT_EQ(s->epoch(), 1u);
    EXPECT_GE(windows.size(), N - 1);  // identical windows are possible but rare
}

TEST(Loader, DeterministicAndSeeded) {
    auto dir = prepared("ld_det");
    auto a = DataLoader::open_split(dir, "train", opts(Packing::Concat, 8));
    auto b = DataLoader::open_split(dir, "train", opts(Packing::Concat, 8));
    auto c = DataLoader::open_split(dir, "train", opts(Packing::Concat, 8, 8));
    bool differs = false;
    for (int i = 0; i < 20; ++i) {
        auto x = next(*a, 4, 8), y = next(*b, 4, 8), z = next(*c, 4, 8);
        EXPECT_EQ(x, y);
        differs |= !(x == z);
    }
    EXPECT_TRUE(differs);
}

TEST(Loader, SaveRestoreGivesIdenticalNextBatches) {
    auto dir = prepared("ld_resume");
    for (Packing p : {Packing::Concat, Packing::Pad}) {
        auto a = DataLoader::open_split(dir, "train", opts(p, 16));
        const std::uint64_t per_epoch_batches = a->units_per_epoch() / 3;
        // Mid-epoch, then across an epoch boundary, with a mix of T (warmup shapes).
        for (std::uint64_t steps : {std::uint64_t{5}, per_epoch_batches + 2}) {
            auto src = DataLoader::open_split(dir, "train", opts(p, 16));
            for (std::uint64_t i = 0; i < steps; ++i) next(*src, 3, i % 2 ? 16 : 8);
            nlohmann::json saved = nlohmann::json::parse(src->state().dump());
            auto dst = DataLoader::open_split(dir, "train", opts(p, 16));
            dst->restore(saved);
            for (int i = 0; i < 2 * static_cast<int>(per_epoch_batches) + 3; ++i)
                ASSERT_EQ(next(*src, 3, 8), next(*dst, 3, 8)) << "step " << i;
            EXPECT_GE(src->epoch(), 1u);
        }
        // State from other data or options is refused.
        auto other = DataLoader::open_split(dir, "train", opts(p, 16, 99));
        EXPECT_THROW(other->restore(a->state()), InvalidInput);
    }
}

TEST(Loader, RankRowsUnionIsTheGlobalBatch) {
    auto dir = prepared("ld_ranks");
    for (Packing p : {Packing::Concat, Packing::Pad}) {
        const int B = 6, T = 8;
        auto global = DataLoader::open_split(dir, "train", opts(p, 8));
        for (int W : {1, 2, 3}) {
            std::vector<std::unique_ptr<DataLoader>> ranks;
            for (int r = 0; r < W; ++r)
                ranks.push_back(DataLoader::open_split(dir, "train", opts(p, 8)));
            auto ref = DataLoader::open_split(dir, "train", opts(p, 8));
            for (int step = 0; step < 25; ++step) {
                Batch want = next(*ref, B, T), got;
                for (int r = 0; r < W; ++r) {
                    Batch part = next(*ranks[r], B, T, r, W);
                    got.tokens.insert(got.tokens.end(), part.tokens.begin(), part.tokens.end());
                    got.targets.insert(got.targets.end(), part.targets.begin(), part.targets.end());
                }
                ASSERT_EQ(got, want) << "world " << W << " step " << step;
                for (int r = 0; r < W; ++r) EXPECT_EQ(ranks[r]->state(), ref->state());
            }
        }
        EXPECT_THROW(DataLoader::rank_rows(4, 2, 2), InvalidInput);
    }
}

TEST(Loader, PadModeMasksPaddingAndTruncates) {
    auto dir = prepared("ld_pad");
    LoaderOptions o = opts(Packing::Pad, 64);
    o.shuffle = false;
    o.pad_id = 0;
    auto l = DataLoader::open_split(dir, "train", o);
    EXPECT_EQ(l->units_per_epoch(), l->documents());
    const int T = 12;
    int padded_rows = 0, full_rows = 0;
    for (std::uint64_t d = 0; d < l->documents(); ++d) {
        Batch b = next(*l, 1, T);
        int n = 0;
        while (n < T && b.targets[n] >= 0) ++n;
        ASSERT_GT(n, 0);
        for (int t = n; t < T; ++t) {
            EXPECT_EQ(b.targets[t], -1);
            EXPECT_EQ(b.tokens[t], 0);
        }
        for (int t = 0; t + 1 < n; ++t) EXPECT_EQ(b.targets[t], b.tokens[t + 1]);
        if (n < T) {
            EXPECT_EQ(b.targets[n - 1], l->eot_id());  // a whole document ends with eot
            padded_rows++;
        } else {
            full_rows++;
        }
        EXPECT_EQ(b.tokens[0], 'd');  // each row starts a document
    }
    EXPECT_GT(padded_rows, 0);
    EXPECT_GT(full_rows, 0);  // truncated documents
    EXPECT_EQ(l->epoch(), 1u);
}

TEST(Loader, WarmupShapesKeepTokensPerStepAndSkipNothing) {
    auto dir = prepared("ld_warmup");
    LoaderOptions o = opts(Packing::Concat, 16);
    auto full = DataLoader::open_split(dir, "train", o);
    auto warm = DataLoader::open_split(dir, "train", o);
    // Two batches of (B=2, T=16) hold the same tokens as two of (B=4, T=8): each window is cut
    // into two rows of 8.
    for (int step = 0; step < 2; ++step) {
        Batch f = next(*full, 2, 16), w = next(*warm, 4, 8);
        EXPECT_EQ(f.tokens, w.tokens);
        for (int row = 0; row < 4; ++row)
            for (int t = 0; t < 8; ++t)
                EXPECT_EQ(w.targets[row * 8 + t], f.targets[(row / 2) * 16 + (row % 2) * 8 + t]);
    }
    EXPECT_EQ(full->state(), warm->state());
    std::vector<std::int32_t> buf(17 * 2);
    EXPECT_THROW(full->next_batch(1, 17, buf.data(), buf.data() + 17), InvalidInput);
}

TEST(Loader, RefusesMissingOrUnfinishedData) {
    auto dir = test::temp_dir("ld_missing");
    EXPECT_THROW(DataLoader::open_split(dir, "train", {}), InvalidInput);
    auto out = prepared("ld_missing2");
    EXPECT_THROW(DataLoader::open_split(out, "test", {}), InvalidInput);  // empty split
    LoaderOptions big = opts(Packing::Concat, 1 << 20);
    EXPECT_THROW(DataLoader::open_split(out, "val", big), InvalidInput);  // shorter than a window
}

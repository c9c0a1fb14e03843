// Training batches from memory-mapped token shards: packing, seeded per-epoch shuffling, exact
// resumable state and data-parallel row assignment.
//
// Packing:
//   concat: the split's shards form one token stream (documents already end with end-of-text).
//           It is cut into windows of seq_len + 1 tokens at stride seq_len (consecutive windows
//           share one token); the windows are the units that are shuffled. A row of length T
//           (T <= seq_len) takes tokens [o, o + T] of the current window: tokens = [o, o + T),
//           targets = [o + 1, o + T]; o advances by T and the next window starts when fewer
//           than T tokens remain. So next_batch(B, T) works for any T <= seq_len: with T
//           dividing seq_len no token is skipped, which is how staged sequence-length warmup
//           keeps tokens per step constant — call next_batch(B * seq_len / T, T) during warmup
//           (finish the current window with the old T, or accept that the rest of the window
//           is skipped when T grows).
//   pad:    one document per row (documents are the shuffled units; those of fewer than two
//           tokens are skipped). tokens = doc[0, n), targets = doc[1, n + 1) with
//           n = min(len - 1, T) (longer documents are truncated); the rest of the row is pad_id
//           with targets -1, which the cross-entropy ignores.
// Shuffling: unit order in epoch e is a bijective pseudo-random permutation of [0, units)
// keyed by (seed, e) (a Feistel network: O(1) memory, no table), or identity when !shuffle.
// State: (epoch, position, offset) — position indexes the epoch's unit order, offset the tokens
// already used of the current concat window. state() / restore() round-trip it through JSON:
//   {"version": 1, "packing": "concat", "seq_len": 1024, "seed": 0, "shuffle": true,
//    "units": 12345, "epoch": 0, "position": 17, "offset": 512}
// and restoring it yields exactly the batches that would have come next.
// Data parallel: every rank calls next_batch with the same global B and T; rank r of W fills
// only rows [B * r / W, B * (r + 1) / W) of the global batch (see rank_rows), and every rank's
// state advances by the whole global batch, so the ranks' rows concatenated in rank order are
// exactly the single-process batch.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "meshlm/data/shard.h"

namespace meshlm {

enum class Packing { Concat, Pad };
Packing parse_packing(const std::string& s);  // "concat" | "pad"; throws InvalidInput
const char* packing_name(Packing p);

struct LoaderOptions {
    Packing packing = Packing::Concat;
    int seq_len = 1024;        // concat: window capacity (the longest T next_batch accepts)
    std::uint64_t seed = 0;    // shuffling seed
    bool shuffle = true;       // false: units in stored order (evaluation)
    std::int32_t pad_id = -1;  // pad: input token on padding; -1 means the end-of-text id
};

// A bijection of [0, n) keyed by (seed, epoch).
class IndexPermutation {
  public:
    IndexPermutation(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch);
    std::uint64_t operator()(std::uint64_t i) const;

  private:
    std::uint64_t n_, seed_, epoch_;
    int half_bits_;
};

class DataLoader {
  public:
    // Opens shards (in order) that must share vocabulary, end-of-text id and token width.
    DataLoader(const std::vector<std::string>& shard_paths, LoaderOptions opt);
    // Opens split ("train", "val", "test") of a prepared directory, checking its shards
    // against meta.json.
    static std::unique_ptr<DataLoader> open_split(const std::string& dir, const std::string& split,
                                                  LoaderOptions opt);

    // Fills this rank's rows of the next global batch of B rows of T tokens: tokens and targets
    // hold (rows, T) with rows = rank_rows(B, rank, world_size) count. Advances by B rows.
    void next_batch(int B, int T, std::int32_t* tokens, std::int32_t* targets, int rank = 0,
                    int world_size = 1);
    // The [begin, end) rows of a global batch of B rows that rank owns.
    static std::pair<int, int> rank_rows(int B, int rank, int world_size);

    nlohmann::json state() const;
    void restore(const nlohmann::json& state);  // throws InvalidInput if saved for other data

    // Full rows (T = seq_len) left before the epoch ends: windows (concat) or documents (pad,
    // an upper bound since documents shorter than two tokens are skipped). Evaluation passes
    // read exactly this many rows from a fresh, unshuffled loader.
    std::uint64_t rows_left_in_epoch() const;
    std::uint64_t epoch() const { return epoch_; }
    std::uint64_t units_per_epoch() const { return units_; }  // windows or documents
    std::uint64_t tokens() const { return tok_offsets_.back(); }
    std::uint64_t documents() const { return doc_offsets_.back(); }
    int vocab_size() const { return shards_.front()->vocab_size(); }
    std::int32_t eot_id() const { return shards_.front()->eot_id(); }

  private:
    void copy_stream(std::uint64_t begin, std::uint64_t n, std::int32_t* out) const;
    std::uint64_t doc_length(std::uint64_t d, std::uint64_t* start) const;
    std::uint64_t unit_at(std::uint64_t position);  // the unit at a position of this epoch
    void advance_unit();
    // Produces the next row; writes it only when tokens != nullptr.
    void next_row(int T, std::int32_t* tokens, std::int32_t* targets);

    std::vector<std::unique_ptr<ShardReader>> shards_;
    std::vector<std::uint64_t> tok_offsets_{0}, doc_offsets_{0};  // cumulative per shard
    LoaderOptions opt_;
    std::uint64_t units_ = 0;
    std::uint64_t epoch_ = 0, position_ = 0, offset_ = 0;
    std::unique_ptr<IndexPermutation> perm_;  // for epoch_
};

}  // namespace meshlm

// The BPE merge table and merge loop shared by every BPE tokenizer in meshlm: the byte-level
// BpeTokenizer (.tiktoken) and the HF pipeline's BPE model (data/hf/bpe_model.h).
//
// A flat open-addressing hash table maps a pair (left id, right id) to (rank, merged id); merge()
// turns a word's symbol ids into tokens by repeatedly merging the adjacent pair of lowest rank,
// leftmost on ties (HF tokenizers' Word::merge_all, tiktoken's byte_pair_merge).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace meshlm {

class BpeMerges {
  public:
    struct Merge {
        std::uint64_t key;  // (left << 32) | right; kEmpty for a free slot
        std::int32_t rank, merged;
    };

    // Collects merges; a repeated pair keeps the later one. finish() builds the table.
    void add(std::int32_t left, std::int32_t right, std::int32_t rank, std::int32_t merged);
    void finish();

    const Merge* find(std::int32_t left, std::int32_t right) const;

    // Merges the n symbol ids at ids (overwritten) and appends the resulting tokens to out.
    void merge(std::int32_t* ids, std::size_t n, std::vector<std::int32_t>& out) const;

  private:
    void merge_short(std::int32_t* ids, std::size_t n, std::vector<std::int32_t>& out) const;
    void merge_long(std::int32_t* ids, std::size_t n, std::vector<std::int32_t>& out) const;

    std::vector<Merge> table_;  // power-of-two size
    std::vector<std::pair<std::uint64_t, std::pair<std::int32_t, std::int32_t>>> pending_;
};

}  // namespace meshlm

// Native byte-level BPE training (GPT-2 style), written out as a Hugging Face tokenizer.json.
//
// 1. Counting: every document is split with the GPT-2 pre-tokenizer (pretokenize.h) and the
//    pre-tokens ("words") are counted; add_documents runs over the documents in parallel with
//    per-thread maps that are summed, so the counts do not depend on the thread count.
// 2. Merging: words become sequences of token ids; pair counts (weighted by word frequency) live
//    in a hash map with, per pair, the words that may hold it, and a max-heap of (count, pair)
//    with lazy invalidation: an entry whose count is stale is re-queued with the current count
//    when it surfaces, and every pair whose count grows gets a fresh entry, so the top entry is
//    always the exact best pair. A merge rewrites only the words holding the pair and applies
//    the count deltas of their neighbours (no recounting).
//
// Ids and ties follow HF tokenizers' BpeTrainer (tokenizers/src/models/bpe/trainer.rs) with
// ByteLevel pre-tokenization and initial_alphabet=ByteLevel.alphabet(): special tokens first
// (ids 0..S-1, in the order given), then the 256 bytes ordered by their ByteLevel character
// (GPT-2's bytes_to_unicode), then one token per merge. The next merge is the pair with the
// highest count; ties go to the smallest (left id, right id). Pairs are merged left to right
// without overlap in each word, as HF's Word::merge does. When a merge's string is already a
// token (reached by another merge path), the merge reuses that id and the vocabulary does not
// grow, as in HF. Training stops at vocab_size tokens or when no pair occurs min_frequency
// times (at least once). Where HF keeps stale duplicate heap entries after such id reuse its
// merge list could differ from ours in rare places; tools/reference/bpe_trainer_reference.py
// measures the agreement (identical merges and vocabulary on the test fixture and on the
// fortunes corpus at vocab 4096 and 16384, tokenizers 0.23.3).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace meshlm {

struct BpeTrainOptions {
    int vocab_size = 50257;  // specials + 256 bytes + merges
    std::vector<std::string> special_tokens = {"<|endoftext|>"};
    std::uint64_t min_frequency = 0;  // a pair needs at least this count (and >= 1) to merge
    int threads = 0;                  // counting threads; 0: all cores
};

struct BpeModel {
    std::vector<std::string> tokens;                            // id -> raw bytes
    std::vector<std::pair<std::int32_t, std::int32_t>> merges;  // in rank order
    std::vector<std::string> special_tokens;                    // ids 0..S-1
};

class BpeTrainer {
  public:
    // Throws InvalidInput for a vocab_size below 256 + specials or bad special tokens.
    explicit BpeTrainer(BpeTrainOptions opt);

    // Pre-tokenizes and counts a batch of documents (call repeatedly to stream a corpus).
    void add_documents(const std::vector<std::string>& docs);
    std::uint64_t distinct_words() const { return word_counts_.size(); }

    // Runs the merges. progress(merges done, merges wanted) is called now and then.
    BpeModel train(const std::function<void(std::size_t, std::size_t)>& progress = {}) const;

  private:
    BpeTrainOptions opt_;
    std::unordered_map<std::string, std::uint64_t> word_counts_;
};

// The model as a HF tokenizer.json (version 1.0, ByteLevel pre-tokenizer and decoder, merges as
// ["a", "b"] pairs, the special tokens as added tokens), pretty-printed like HF's save().
std::string bpe_model_to_hf_json(const BpeModel& model);

}  // namespace meshlm

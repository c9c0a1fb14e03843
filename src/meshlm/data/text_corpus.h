// Plain-text corpora: documents read from files, split into train and validation by document,
// tokenized into two token streams with an end-of-document token after every document.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "meshlm/core/rng.h"
#include "meshlm/data/data_config.h"
#include "meshlm/data/tokenizer.h"

namespace meshlm {

// Reads documents from a file or a directory (recursively, files in name order). A document
// ends at a line equal to `separator` (or at the end of a file); empty documents are dropped.
// Binary files (holding NUL bytes) and second paths to the same file are skipped.
std::vector<std::string> read_documents(const std::string& path, const std::string& separator);

struct Corpus {
    std::vector<std::int32_t> train, val;  // token streams
    std::size_t train_docs = 0, val_docs = 0, bytes = 0;
};

// A seeded shuffle of the documents puts val_fraction of them (at least one) in validation.
Corpus build_corpus(const DataConfig& cfg, const Tokenizer& tok);

// A batch of B windows of T+1 tokens: tokens = window[0..T), targets = window[1..T].
// Windows start at uniformly random offsets drawn from rng.
void sample_windows(const std::vector<std::int32_t>& stream, int B, int T, Philox& rng,
                    std::int32_t* tokens, std::int32_t* targets);

// Uniformly random tokens in [0, V) (benchmarks): targets are the next token as usual.
void random_tokens(int B, int T, int V, Philox& rng, std::int32_t* tokens, std::int32_t* targets);

// Number of non-overlapping windows of T+1 tokens (stride T) in a stream.
std::size_t window_count(const std::vector<std::int32_t>& stream, int T);
// Fills window w (stride T) of the stream.
void fill_window(const std::vector<std::int32_t>& stream, std::size_t w, int T,
                 std::int32_t* tokens, std::int32_t* targets);

}  // namespace meshlm

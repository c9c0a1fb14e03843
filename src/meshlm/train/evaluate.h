// Evaluation passes over a prepared split: mean loss per token, perplexity and bits per byte.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "meshlm/data/loader.h"
#include "meshlm/data/tokenizer.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm {

struct EvalResult {
    double loss_sum = 0;       // nats, over every scored token
    std::uint64_t tokens = 0;  // scored tokens (targets >= 0)
    std::uint64_t bytes = 0;   // text bytes those tokens stand for
    double loss() const { return tokens ? loss_sum / tokens : 0; }
    double perplexity() const;
    double bits_per_byte() const;
};

// Bytes of text each token id stands for: the length of its decoded text, and 1 for the
// end-of-text token (so that with the byte tokenizer bits per byte = nats per token / ln 2).
std::vector<std::uint32_t> token_byte_lengths(const Tokenizer& tok, int vocab_size);

// Scores the loader's rows from where it stands, in batches of up to B rows of T tokens, for
// max_batches batches (0 = to the end of the current epoch). tokens and targets hold B*T ids.
// Data parallel: each of `world` ranks scores its rows of global batches of B * world rows
// (DataLoader::rank_rows); summing the ranks' results gives the single-process result of
// batches of B * world rows.
// The model as evaluate() needs it: per-token losses of (rows, T) ids (a Transformer, or a
// tensor-parallel shard of one whose model ranks all score the same rows). It is called for every
// batch, with rows == 0 when this rank has none of the batch's rows, so that a model whose forward
// is collective over the data ranks (FSDP) stays in step; it may then return nullptr.
using BatchLosses = std::function<const float*(const std::int32_t* tokens,
                                               const std::int32_t* targets, int rows, int T)>;
// Called after every batch with (batches done, batches in this evaluation).
using EvalProgress = std::function<void(long done, long total)>;
EvalResult evaluate(const BatchLosses& model, DataLoader& loader, int B, int T, long max_batches,
                    const std::vector<std::uint32_t>& token_bytes, std::int32_t* tokens,
                    std::int32_t* targets, int rank = 0, int world = 1,
                    const EvalProgress& progress = {});
EvalResult evaluate(Transformer& model, const float* params, DataLoader& loader, int B, int T,
                    long max_batches, const std::vector<std::uint32_t>& token_bytes,
                    std::int32_t* tokens, std::int32_t* targets, int rank = 0, int world = 1);

}  // namespace meshlm

// The input embedding: token rows of wte plus, with learned positions, rows of wpe.
//   x[n] = wte[tokens[n]] + wpe[n % T]
// Under tensor parallelism wte is split by vocabulary rows (padded to a multiple of the model
// ranks): each rank looks up the tokens in its range, zeros elsewhere, and the rows are summed
// over the ranks. Backward scatters dx into this rank's wte rows and into wpe (replicated).
#pragma once

#include <cstdint>

#include "meshlm/core/model_comm.h"
#include "meshlm/model/model_config.h"

namespace meshlm {

struct Embedding {
    int C, v0, Vvalid;  // this rank's vocabulary rows [v0, v0 + Vvalid)
    bool learned;
    ModelComm* mp;

    Embedding(const ModelConfig& cfg, ModelComm& comm);
    // Row n is at position n % T.
    void forward(float* x, const std::int32_t* tokens, const float* wte, const float* wpe, int N,
                 int T) const;
    void backward(float* dwte, float* dwpe, const float* dx, const std::int32_t* tokens, int N,
                  int T) const;
};

// This rank's rows of a vocabulary of V split over `model` ranks: [first, first + valid) of a
// block of `rows` (the padded share).
struct VocabShard {
    int first, valid, rows;
};
VocabShard vocab_shard(int V, int model, int rank);

}  // namespace meshlm

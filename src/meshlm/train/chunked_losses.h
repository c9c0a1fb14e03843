// Whole rows through a forward planned for shorter ones: B rows of T tokens run as T / U chunks
// of U tokens, Transformer-VQ's attention state carried from each chunk into the next, so every
// token is scored with its whole row before it. model.vq.update_len plans training for U-token
// rows; evaluation scores full rows this way in the same activation memory.
#pragma once

#include <cstdint>
#include <vector>

#include "meshlm/kernels/ops/op_params.h"
#include "meshlm/model/transformer.h"
#include "meshlm/train/evaluate.h"

namespace meshlm {

// Chunk c (U tokens) of each of `rows` rows of T ids, packed as (rows, U).
void copy_row_chunk(const std::int32_t* rows_of_t, int rows, int T, int c, int U,
                    std::int32_t* out);

class ChunkedLosses {
  public:
    // chunk: per-token losses of (rows, U) ids by a forward of `model` (rows == 0 runs only its
    // collectives, as BatchLosses). `model` must be Transformer-VQ: only its attention carries.
    ChunkedLosses(Transformer& model, int U, BatchLosses chunk);

    // Per-token losses of (rows, T) ids, T a multiple of U; nullptr when rows == 0.
    const float* operator()(const std::int32_t* tokens, const std::int32_t* targets, int rows,
                            int T);

  private:
    Transformer& model_;
    int U_;
    BatchLosses chunk_;
    std::vector<kernels::VqAttnState> states_;  // [layer][row], emptied in place per batch
    std::vector<std::int32_t> tokens_, targets_;
    std::vector<float> losses_;
};

}  // namespace meshlm

// How ZeRO cuts the flat parameter / gradient / optimizer buffers over N data-parallel ranks,
// and what each rank then holds.
//
// Partition: the flat buffer of `total` floats is padded to N equal chunks of `chunk` floats,
// chunk = round_up(ceil(total / N), 16) (16 floats = one cache line, as ParamLayout aligns
// slices); rank r owns [r * chunk, (r + 1) * chunk). The padding is zero and never read by the
// model. One rank (N = 1) has one chunk of exactly `total` floats.
//
// Per-rank bytes of persistent training state with fp32 AdamW (Ψ = padded floats), as in the
// ZeRO paper: stage 0: 4Ψ params + 4Ψ grads + 8Ψ moments = 16Ψ; stage 1: 4Ψ + 4Ψ + 8Ψ/N;
// stage 2: 4Ψ + 4Ψ/N + 8Ψ/N; stage 3: 16Ψ/N.
// Working buffers during a step, on N > 1 ranks: stage 2 streams the gradients unit by unit
// (parallel/fsdp.h: the embeddings' and ln_f's, two block slots), stage 3 the parameters too.
// On one rank there is nothing to shard: stage 2 keeps whole gradients, stage 3 whole
// gradients and parameters.
#pragma once

#include <cstddef>

#include "meshlm/core/param_layout.h"

namespace meshlm {

struct ZeroPlan {
    ZeroPlan(std::size_t total, int ranks, int rank, int stage);

    std::size_t total;  // floats of the layout
    int ranks, rank, stage;
    std::size_t chunk;   // floats per rank
    std::size_t padded;  // chunk * ranks
    std::size_t begin() const { return chunk * static_cast<std::size_t>(rank); }
    std::size_t end() const { return begin() + chunk; }
};

struct ZeroMemory {
    std::size_t params, grads, optimizer;  // persistent state, bytes per rank
    std::size_t working;                   // whole-model buffers of a step (see above)
    std::size_t total() const { return params + grads + optimizer + working; }
};

// What a rank of `plan` allocates (fp32 params and grads, `optimizer_states` fp32 buffers of
// optimizer state per parameter: AdamW 2, Lion 1) for `layout`, the buffer the plan chunks (a
// model layout, whole or a tensor-parallel shard).
// bf16: a bf16 run's stage 3, which gathers the parameters in bf16 (parallel/fsdp.h).
ZeroMemory zero_memory(const ZeroPlan& plan, const ParamLayout& layout, int optimizer_states = 2,
                       bool bf16 = false);
// What the working bytes of `plan` hold, for reports: "FSDP unit buffers" (stage 3),
// "gradient unit buffers" (stage 2), "whole-model working" (one rank).
const char* zero_working_label(const ZeroPlan& plan);

}  // namespace meshlm

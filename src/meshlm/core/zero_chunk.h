// How ZeRO cuts a flat buffer of `total` floats among `ranks` data ranks: padded to equal chunks
// of chunk = round_up(ceil(total / ranks), 16) floats (16 floats = one cache line, as ParamLayout
// aligns slices); one rank has one chunk of exactly `total`. The optimizer's partition
// (parallel/zero_plan.h) and the sharded checkpoint format (io/shard_format.h) both cut by it.
#pragma once

#include <cstddef>

namespace meshlm {

std::size_t zero_chunk(std::size_t total, int ranks);

// parallel.zero_stage must be 0-3; InvalidInput naming the value otherwise.
void check_zero_stage(int stage);

}  // namespace meshlm

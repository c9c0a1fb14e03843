// Gradient all-reduce in buckets: every bucket's non-blocking all-reduce is started before the
// first is waited on, so MPI moves several messages at once and the per-message latency
// overlaps. Used after backward where the model gives no per-block hook (tensor parallelism);
// GradReducer (grad_reducer.h) starts the buckets during backward instead.
#pragma once

#include <cstddef>

#include "meshlm/parallel/comm.h"

namespace meshlm {

inline constexpr std::size_t kGradBucketFloats = std::size_t{1} << 20;  // 4 MiB

// buf[0..n) summed over the ranks of comm, in buckets of at most `bucket` floats.
void bucketed_all_reduce(Comm& comm, float* buf, std::size_t n,
                         std::size_t bucket = kGradBucketFloats);

}  // namespace meshlm

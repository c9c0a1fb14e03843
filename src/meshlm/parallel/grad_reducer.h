// Data-parallel gradient all-reduce that overlaps the backward pass: the caller reports ranges
// of the flat gradient buffer as they become final (block by block, from the model's backward
// hook) and their non-blocking all-reduces start at once, in buckets; finish() reduces what was
// never reported (embeddings, final LayerNorm) and waits for everything.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "meshlm/parallel/comm.h"

namespace meshlm {

class GradReducer {
  public:
    GradReducer(Comm& comm, std::size_t bucket_floats);

    // Starts a step over buf[0..n).
    void begin(float* buf, std::size_t n);
    // buf[lo..hi) is final: start reducing it (ranges must not overlap). Also drives progress of
    // the reductions already in flight.
    void ready(std::size_t lo, std::size_t hi);
    // Reduces every range not reported yet and waits for all of them.
    void finish();

  private:
    void start(std::size_t lo, std::size_t hi);

    Comm& comm_;
    std::size_t bucket_;
    float* buf_ = nullptr;
    std::size_t n_ = 0;
    std::vector<std::pair<std::size_t, std::size_t>> started_;
    std::vector<CommRequest> pending_;
};

}  // namespace meshlm

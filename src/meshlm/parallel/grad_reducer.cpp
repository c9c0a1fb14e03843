#include "meshlm/parallel/grad_reducer.h"

#include <algorithm>

#include "meshlm/core/error.h"

namespace meshlm {

GradReducer::GradReducer(Comm& comm, std::size_t bucket_floats)
    : comm_(comm), bucket_(bucket_floats) {}

void GradReducer::begin(float* buf, std::size_t n) {
    MESHLM_CHECK(pending_.empty(), "GradReducer::begin with reductions still in flight");
    buf_ = buf;
    n_ = n;
    started_.clear();
}

void GradReducer::start(std::size_t lo, std::size_t hi) {
    for (std::size_t at = lo; at < hi; at += bucket_)
        pending_.push_back(comm_.iall_reduce_sum(buf_ + at, std::min(bucket_, hi - at)));
    started_.emplace_back(lo, hi);
}

void GradReducer::ready(std::size_t lo, std::size_t hi) {
    MESHLM_CHECK(lo <= hi && hi <= n_, "GradReducer::ready: range out of the buffer");
    if (comm_.size() == 1 || lo == hi) return;
    start(lo, hi);
    for (CommRequest& r : pending_) r.test();  // MPI advances non-blocking work inside calls
}

void GradReducer::finish() {
    if (comm_.size() > 1) {
        // The complement of the started ranges.
        std::sort(started_.begin(), started_.end());
        std::size_t at = 0;
        const auto done = started_;
        for (const auto& [lo, hi] : done) {
            if (lo > at) start(at, lo);
            at = std::max(at, hi);
        }
        if (at < n_) start(at, n_);
    }
    for (CommRequest& r : pending_) r.wait();
    pending_.clear();
}

}  // namespace meshlm

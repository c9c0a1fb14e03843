// CommRequest: completion of a non-blocking collective, whatever the backend.
#include "meshlm/parallel/comm.h"

#include "meshlm/core/trace.h"

namespace meshlm {

CommRequest& CommRequest::operator=(CommRequest&& other) noexcept {
    if (this != &other) {
        finish_quietly();
        pending_ = std::move(other.pending_);
        wait_name_ = other.wait_name_;
    }
    return *this;
}

CommRequest::~CommRequest() {
    finish_quietly();
}

void CommRequest::wait() {
    if (!pending_) return;
    auto p = std::move(pending_);  // complete (or failed) either way: never waited twice
    TraceScope trace(wait_name_);
    p->wait();
}

bool CommRequest::test() {
    if (pending_ && pending_->test()) pending_.reset();
    return !pending_;
}

// A pending request dropped without wait() (an exception unwinding past it) still has to
// complete before its buffers go; its error, if any, is secondary to the one in flight.
void CommRequest::finish_quietly() noexcept {
    try {
        wait();
    } catch (...) {
    }
}

}  // namespace meshlm

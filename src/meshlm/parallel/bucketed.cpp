#include "meshlm/parallel/bucketed.h"

#include <algorithm>
#include <vector>

namespace meshlm {

void bucketed_all_reduce(Comm& comm, float* buf, std::size_t n, std::size_t bucket) {
    if (comm.size() == 1 || n == 0) return;
    std::vector<CommRequest> pending;
    pending.reserve((n + bucket - 1) / bucket);
    for (std::size_t at = 0; at < n; at += bucket)
        pending.push_back(comm.iall_reduce_sum(buf + at, std::min(bucket, n - at)));
    for (CommRequest& r : pending) r.wait();
}

}  // namespace meshlm

// bootstrap_broadcast (parallel/bootstrap.h): a size agreement, then one broadcast.
#include "meshlm/parallel/bootstrap.h"

#include "meshlm/core/error.h"

namespace meshlm {

void bootstrap_broadcast(Comm& comm, std::span<std::uint8_t> blob, int root) {
    std::int64_t lo = static_cast<std::int64_t>(blob.size()), hi = lo;
    comm.all_reduce_min(&lo, 1);
    comm.all_reduce_max(&hi, 1);
    if (lo != hi)
        throw Error(detail::concat("bootstrap_broadcast: ranks pass blobs of ", lo, " to ", hi,
                                   " bytes (rank ", comm.rank(), " passed ", blob.size(),
                                   "); every rank must pass the same size"));
    comm.broadcast(blob.data(), blob.size(), root);
}

}  // namespace meshlm

#include "meshlm/parallel/tp_shard.h"

#include <cstring>

#include "meshlm/core/buffer.h"
#include "meshlm/core/error.h"
#include "meshlm/kernels/ops/clip.h"

namespace meshlm {
void tp_gather(const ParamLayout& full_layout, const ParamLayout& local_layout, Comm& comm,
               const float* local, float* full) {
    Comm& host = comm.host();
    const int M = host.size();
    const std::size_t n = local_layout.total();
    Buffer<float> all(n * M);
    std::memcpy(all.data() + n * host.rank(), local, n * sizeof(float));
    host.all_gather(all.data(), n);
    for (int r = 0; r < M; ++r) tp_place(full_layout, local_layout, M, r, all.data() + n * r, full);
}

double tp_sum_squares(const ParamLayout& local_layout, const float* local, Comm& comm,
                      Device device) {
    double sums[2] = {0, 0};  // split (differs per rank), replicated (the same on every rank)
    for (const ParamSlice& s : local_layout.slices())
        sums[s.split == TpSplit::replicated] +=
            ops::sum_squares(flat(local + s.offset, s.numel, device));
    comm.host().all_reduce_sum(sums, 1);
    return sums[0] + sums[1];
}

}  // namespace meshlm

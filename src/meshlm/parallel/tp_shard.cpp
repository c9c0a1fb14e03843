#include "meshlm/parallel/tp_shard.h"

#include <cstring>

#include "meshlm/core/buffer.h"
#include "meshlm/core/error.h"
#include "meshlm/kernels/ops/clip.h"

namespace meshlm {
namespace {

// f(full slice, local slice, full offset, local offset, length) for every piece rank r holds.
template <typename F>
void for_each_piece(const ParamLayout& full, const ParamLayout& local, int M, int r, F&& f) {
    MESHLM_CHECK(full.slices().size() == local.slices().size(), "layouts of ", full.slices().size(),
                 " and ", local.slices().size(), " tensors");
    for (std::size_t i = 0; i < full.slices().size(); ++i) {
        const ParamSlice &fs = full.slices()[i], &ls = local.slices()[i];
        tp_for_each_piece(fs, M, r, [&](std::size_t fo, std::size_t lo, std::size_t n) {
            f(fs.offset + fo, ls.offset + lo, n);
        });
    }
}

}  // namespace

void tp_scatter(const ParamLayout& full_layout, const ParamLayout& local_layout, int model,
                int rank, const float* full, float* local) {
    for_each_piece(full_layout, local_layout, model, rank,
                   [&](std::size_t fo, std::size_t lo, std::size_t n) {
                       std::memcpy(local + lo, full + fo, n * sizeof(float));
                   });
}

void tp_place(const ParamLayout& full_layout, const ParamLayout& local_layout, int model, int rank,
              const float* local, float* full) {
    for_each_piece(full_layout, local_layout, model, rank,
                   [&](std::size_t fo, std::size_t lo, std::size_t n) {
                       std::memcpy(full + fo, local + lo, n * sizeof(float));
                   });
}

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

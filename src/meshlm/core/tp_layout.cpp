#include "meshlm/core/tp_layout.h"

#include <cstring>

#include "meshlm/core/error.h"

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

}  // namespace meshlm

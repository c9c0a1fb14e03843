// Shard <-> full moves for tensor parallelism: each split is a list of contiguous pieces
// (offset in the full tensor, offset in the local one, length), walked in both directions.
#include "meshlm/parallel/tp_layout.h"

#include <algorithm>
#include <cstring>

#include "meshlm/core/buffer.h"
#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/model/gpt2.h"
#include "meshlm/parallel/mesh.h"

namespace meshlm {
namespace {

bool ends_with(const std::string& s, const char* suffix) {
    const std::size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Calls f(full_offset, local_offset, length) for each contiguous piece rank `r` holds of a
// full tensor of `shape`.
template <typename F>
void for_each_piece(TpSplit split, const Shape& shape, int M, int r, F&& f) {
    const auto rows = static_cast<std::size_t>(shape.dims[0]);
    const auto cols = static_cast<std::size_t>(shape.ndim == 2 ? shape.dims[1] : 1);
    switch (split) {
        case TpSplit::replicated:
            f(0, 0, rows * cols);
            break;
        case TpSplit::rows: {
            const std::size_t n = rows / M * cols;
            f(r * n, 0, n);
            break;
        }
        case TpSplit::columns: {
            const std::size_t cl = cols / M;
            for (std::size_t i = 0; i < rows; ++i) f(i * cols + r * cl, i * cl, cl);
            break;
        }
        case TpSplit::qkv_rows: {
            const std::size_t third = rows / 3, rl = third / M;
            for (std::size_t p = 0; p < 3; ++p)
                f((p * third + r * rl) * cols, p * rl * cols, rl * cols);
            break;
        }
    }
}

Shape local_shape(TpSplit split, Shape s, int M) {
    if (split == TpSplit::rows || split == TpSplit::qkv_rows) s.dims[0] /= M;
    if (split == TpSplit::columns) s.dims[1] /= M;
    return s;
}

template <typename F>
void for_each_slice(const ModelConfig& cfg, int M, F&& f) {
    const ParamLayout full = gpt2_layout(cfg);
    const ParamLayout local = tp_local_layout(cfg, M);
    for (std::size_t i = 0; i < full.slices().size(); ++i) f(full.slices()[i], local.slices()[i]);
}

}  // namespace

TpSplit tp_split_of(const std::string& name) {
    if (name == "wte.weight") return TpSplit::rows;
    if (ends_with(name, "attn.c_attn.weight") || ends_with(name, "attn.c_attn.bias"))
        return TpSplit::qkv_rows;
    if (ends_with(name, "mlp.c_fc.weight") || ends_with(name, "mlp.c_fc.bias"))
        return TpSplit::rows;
    if (ends_with(name, "c_proj.weight")) return TpSplit::columns;
    return TpSplit::replicated;
}

ParamLayout tp_local_layout(const ModelConfig& cfg, int model) {
    MESHLM_CHECK(model >= 1, "parallel.model must be at least 1");
    check_model_parallel_shapes(model, cfg.n_head, cfg.mlp_width(), cfg.vocab_size);
    const ParamLayout full = gpt2_layout(cfg);
    ParamLayout local;
    for (const ParamSlice& s : full.slices())
        local.add(s.name, local_shape(tp_split_of(s.name), s.shape, model), s.layer);
    return local;
}

void tp_for_each_piece(const std::string& name, const Shape& shape, int model, int rank,
                       const std::function<void(std::size_t, std::size_t, std::size_t)>& f) {
    for_each_piece(tp_split_of(name), shape, model, rank, f);
}

void tp_scatter(const ModelConfig& cfg, int model, int rank, const float* full, float* local) {
    for_each_slice(cfg, model, [&](const ParamSlice& fs, const ParamSlice& ls) {
        for_each_piece(tp_split_of(fs.name), fs.shape, model, rank,
                       [&](std::size_t fo, std::size_t lo, std::size_t n) {
                           std::memcpy(local + ls.offset + lo, full + fs.offset + fo,
                                       n * sizeof(float));
                       });
    });
}

void tp_place(const ModelConfig& cfg, int model, int rank, const float* local, float* full) {
    for_each_slice(cfg, model, [&](const ParamSlice& fs, const ParamSlice& ls) {
        for_each_piece(tp_split_of(fs.name), fs.shape, model, rank,
                       [&](std::size_t fo, std::size_t lo, std::size_t n) {
                           std::memcpy(full + fs.offset + fo, local + ls.offset + lo,
                                       n * sizeof(float));
                       });
    });
}

void tp_gather(const ModelConfig& cfg, Comm& comm, const float* local, float* full) {
    const int M = comm.size();
    const std::size_t n = tp_local_layout(cfg, M).total();
    Buffer<float> all(n * M);
    std::memcpy(all.data() + n * comm.rank(), local, n * sizeof(float));
    comm.all_gather(all.data(), n);
    for (int r = 0; r < M; ++r) tp_place(cfg, M, r, all.data() + n * r, full);
}

void tp_init_shard(const ModelConfig& cfg, int model, int rank, float* local, std::uint64_t seed) {
    tp_init_range(cfg, model, rank, local, seed, 0, tp_local_layout(cfg, model).total());
}

void tp_init_range(const ModelConfig& cfg, int model, int rank, float* local, std::uint64_t seed,
                   std::size_t begin, std::size_t end) {
    const ParamLayout full_layout = gpt2_layout(cfg);
    for_each_slice(cfg, model, [&](const ParamSlice& fs, const ParamSlice& ls) {
        for_each_piece(tp_split_of(fs.name), fs.shape, model, rank,
                       [&](std::size_t fo, std::size_t lo, std::size_t n) {
                           const std::size_t at = ls.offset + lo;  // the piece, locally
                           const std::size_t a = std::max(at, begin), b = std::min(at + n, end);
                           if (a >= b) return;
                           const std::size_t from = fs.offset + fo + (a - at);
                           gpt2_init_range(cfg, full_layout, local + (a - begin), seed, from,
                                           from + (b - a));
                       });
    });
}

double tp_sum_squares(const ParamLayout& local_layout, const float* local, Comm& comm) {
    double sums[2] = {0, 0};  // sharded (differs per rank), replicated (the same on every rank)
    for (const ParamSlice& s : local_layout.slices())
        sums[tp_split_of(s.name) == TpSplit::replicated] +=
            kernels::sum_squares(local + s.offset, s.numel);
    comm.all_reduce_sum(sums, 1);
    return sums[0] + sums[1];
}

}  // namespace meshlm

#include "meshlm/optim/adafactor_plan.h"

#include <algorithm>

#include "meshlm/core/error.h"

namespace meshlm {
namespace {

// A block of a tensor this rank holds: `rows` rows of `width` elements, contiguous from local
// element `local` of the slice, at whole (row0, col0).
struct Block {
    std::size_t local;
    std::int64_t rows, width, row0, col0;
};

// The slice's blocks from its tensor-parallel pieces (tp_for_each_piece): whole rows stay one
// block; the per-row pieces of a columns split join into one block of the column range.
std::vector<Block> blocks_of(const ParamSlice& s, std::int64_t cols, int model_ranks, int rank) {
    std::vector<Block> out;
    const auto C = static_cast<std::size_t>(cols);
    tp_for_each_piece(s, model_ranks, rank, [&](std::size_t at, std::size_t local, std::size_t n) {
        const auto row = static_cast<std::int64_t>(at / C), col = static_cast<std::int64_t>(at % C);
        if (col == 0 && n % C == 0) {
            out.push_back({local, static_cast<std::int64_t>(n / C), cols, row, 0});
            return;
        }
        const auto w = static_cast<std::int64_t>(n);
        if (!out.empty()) {
            Block& b = out.back();
            if (b.width == w && b.col0 == col && b.row0 + b.rows == row &&
                b.local + static_cast<std::size_t>(b.rows * b.width) == local) {
                ++b.rows;
                return;
            }
        }
        out.push_back({local, 1, w, row, col});
    });
    return out;
}

}  // namespace

bool adafactor_factors(const Shape& shape, const OptimConfig& cfg) {
    if (!cfg.adafactor_factored || shape.ndim < 2) return false;
    MESHLM_CHECK(shape.ndim == 2, "Adafactor factors 2-D tensors only (got ", shape.str(), ")");
    return std::min(shape[0], shape[1]) >= cfg.adafactor_min_dim_size_to_factor;
}

AdafactorPlan adafactor_plan(const ParamLayout& layout, int model_ranks, int model_rank,
                             std::size_t begin, std::size_t end, const OptimConfig& cfg) {
    AdafactorPlan plan;
    for (const ParamSlice& s : layout.slices()) {
        const Shape& whole = s.full_shape;
        AdafactorTensor t{whole[0], whole.ndim == 2 ? whole[1] : 1, false, 0};
        const bool weight = s.ema_decay == 0.f;
        t.factored = weight && adafactor_factors(whole, cfg);
        if (t.factored) {
            t.stat = plan.stat_floats;
            const std::size_t rows = static_cast<std::size_t>(t.rows);
            plan.stats.push_back({"exp_avg_sq_row." + s.name, Shape{t.rows}, t.stat});
            plan.stats.push_back({"exp_avg_sq_col." + s.name, Shape{t.cols}, t.stat + rows});
            plan.stat_floats += rows + static_cast<std::size_t>(t.cols);
        }
        const int index = static_cast<int>(plan.tensors.size());
        plan.tensors.push_back(t);
        if (!weight) continue;
        const bool counts = s.split != TpSplit::replicated || model_rank == 0;
        for (const Block& b : blocks_of(s, t.cols, model_ranks, model_rank)) {
            const std::size_t lo_b = s.offset + b.local;
            const std::size_t n = static_cast<std::size_t>(b.rows * b.width);
            const std::size_t lo = std::max(lo_b, begin), hi = std::min(lo_b + n, end);
            if (lo < hi)
                plan.pieces.push_back(
                    {lo - begin, hi - lo, index, lo - lo_b, b.width, b.row0, b.col0, counts});
        }
    }
    return plan;
}

}  // namespace meshlm

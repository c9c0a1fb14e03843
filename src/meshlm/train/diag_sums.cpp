#include "meshlm/train/diag_sums.h"

#include <algorithm>

#include "meshlm/kernels/ops/clip.h"

namespace meshlm {

void DiagSums::reset(int n_layer, std::size_t slices) {
    resid.assign(2 * static_cast<std::size_t>(n_layer), 0.0);
    update_sq.assign(slices, 0.0);
    weight_sq.assign(slices, 0.0);
    small = Small::none;
    missing.clear();
    grad_sq = small_tokens = big_tokens = 0;
}

void DiagSums::start_step(const std::int32_t* targets, std::size_t per, int micro,
                          std::int64_t scored, bool distributed, bool overlapped,
                          bool tensor_parallel) {
    big_tokens = static_cast<double>(scored);
    if (tensor_parallel) {
        missing = "not with tensor parallelism (parallel.model > 1)";
        return;
    }
    if (distributed && !overlapped) {
        missing =
            "not at ZeRO stage 2-3, which reduce-scatter each block's gradients as the "
            "backward makes them: no rank holds its own gradient whole";
        return;
    }
    if (!distributed && micro < 2) {
        missing =
            "one process without gradient accumulation sees one batch size; set "
            "train.grad_accum > 1 or train on several data-parallel ranks";
        return;
    }
    // Several ranks: all of this rank's micro-batches; one: the first micro-batch.
    const std::size_t n = distributed ? per * static_cast<std::size_t>(micro) : per;
    small_tokens = static_cast<double>(
        std::count_if(targets, targets + n, [](std::int32_t t) { return t >= 0; }));
    small = distributed ? Small::rank : Small::first_micro;
}

void DiagSums::micro_done(int m, const ParamLayout& layout, const float* grads, Device d) {
    if (small == Small::first_micro && m == 0)
        grad_sq = grad_sum_squares(layout, grads, 0, layout.total(), d);
}

void DiagSums::rank_range(const ParamLayout& layout, const float* grads, std::size_t lo,
                          std::size_t hi, Device d) {
    if (small == Small::rank) grad_sq += grad_sum_squares(layout, grads, lo, hi, d);
}

void DiagSums::rank_rest(const ParamLayout& layout, const float* grads,
                         const std::vector<std::pair<std::size_t, std::size_t>>& blocks, Device d) {
    if (small != Small::rank) return;
    auto ranges = blocks;
    std::sort(ranges.begin(), ranges.end());
    std::size_t at = 0;
    for (const auto& [lo, hi] : ranges) {
        if (lo > at) grad_sq += grad_sum_squares(layout, grads, at, lo, d);
        at = std::max(at, hi);
    }
    if (at < layout.total()) grad_sq += grad_sum_squares(layout, grads, at, layout.total(), d);
}

void DiagSums::add_update(const ParamLayout& layout, const float* before, const float* after,
                          std::size_t lo, std::size_t hi) {
    const auto& slices = layout.slices();
    for (std::size_t i = 0; i < slices.size(); ++i) {
        const ParamSlice& s = slices[i];
        const std::size_t a = std::max(s.offset, lo), b = std::min(s.offset + s.numel, hi);
        if (a >= b || s.ema_decay > 0.f) continue;
        double du = 0, w = 0;
        for (std::size_t k = a - lo; k < b - lo; ++k) {
            const double d = static_cast<double>(after[k]) - before[k];
            du += d * d;
            w += static_cast<double>(after[k]) * after[k];
        }
        update_sq[i] += du;
        weight_sq[i] += w;
    }
}

double grad_sum_squares(const ParamLayout& layout, const float* grads, std::size_t lo,
                        std::size_t hi, Device d) {
    double sum = 0;  // (padding between slices is zero: left out)
    for (const ParamSlice& s : layout.slices()) {
        const std::size_t a = std::max(s.offset, lo), b = std::min(s.offset + s.numel, hi);
        if (a >= b || s.ema_decay > 0.f) continue;
        sum += ops::sum_squares(flat(grads + a, b - a, d));
    }
    return sum;
}

}  // namespace meshlm

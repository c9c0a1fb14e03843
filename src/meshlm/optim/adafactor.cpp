// Optimizer::step for Adafactor over a range that may hold parts of tensors (a ZeRO chunk, a
// tensor-parallel shard): the math is in the adafactor ops (kernels/ops/adafactor.h). Three passes,
// with the ranks' partial sums added up (tensor_sum_) between them, so that every statistic is the
// whole tensor's:
//   1. per factored tensor the row and column sums of g^2 + eps, per tensor the sum of p^2;
//      summed over the ranks; then every rank decays the factored statistics of EVERY tensor
//      (they are replicated, and stay the same on every rank) and derives the update's factors
//   2. the full second moments of the other tensors, and per tensor the sum of u^2; summed
//   3. p = p (1 - lr_g wd_g) - lr_g max(rms(p), 1e-3) u / max(1, rms(u) / clipping_threshold)
// Every sum is a double; a rank adds only the pieces it counts (a tensor replicated over the
// model ranks counts on model rank 0).
#include <algorithm>
#include <cmath>
#include <span>

#include "meshlm/kernels/ops/adafactor.h"
#include "meshlm/kernels/ops/clip.h"
#include "meshlm/optim/optimizer.h"

namespace meshlm {
namespace {

ops::AdafactorRun run_of(const AdafactorPiece& p) {
    return {.first = static_cast<std::int64_t>(p.first),
            .width = p.width,
            .row0 = p.row0,
            .col0 = p.col0};
}

// A piece of a flat buffer (parameters, gradients, second moments), on the host for now.
Tensor piece(const float* base, std::size_t offset, std::size_t numel) {
    return flat(base + offset, numel, Device::cpu);
}

}  // namespace

void Optimizer::adafactor_step(float* params, const float* grads, float lr) {
    const std::size_t S = plan_.stat_floats, T = plan_.tensors.size();
    const float eps = cfg_.adafactor_eps;
    // optax: decay 1 - (count + 1)^-decay_rate with count the updates before this one.
    const float beta =
        static_cast<float>(1.0 - std::pow(static_cast<double>(step_),
                                          -static_cast<double>(cfg_.adafactor_decay_rate)));
    double* sums = sums_.data();
    double *p_sq = sums + S, *u_sq = sums + S + T;
    std::fill_n(sums, S + 2 * T, 0.0);

    // 1. row and column sums, parameter squares
    for (const AdafactorPiece& p : plan_.pieces) {
        if (!p.counts) continue;
        const AdafactorTensor& t = plan_.tensors[p.tensor];
        if (t.factored)
            ops::adafactor_factored_sums(piece(grads, p.offset, p.numel), run_of(p), eps,
                                         std::span(sums + t.stat, t.rows),
                                         std::span(sums + t.stat + t.rows, t.cols));
        if (cfg_.adafactor_multiply_by_parameter_scale)
            p_sq[p.tensor] += ops::sum_squares(piece(params, p.offset, p.numel));
    }
    if (tensor_sum_) tensor_sum_(sums, S + T);
    for (const AdafactorTensor& t : plan_.tensors) {
        if (!t.factored) continue;
        const std::int64_t R = t.rows, C = t.cols;
        float *r = stats_.data() + t.stat, *c = r + R;
        float *rs = scales_.data() + t.stat, *cs = rs + R;
        const double *row_sum = sums + t.stat, *col_sum = row_sum + R;
        double r_mean = 0, c_mean = 0;
        for (std::int64_t i = 0; i < R; ++i) {
            r[i] = beta * r[i] + (1.f - beta) * static_cast<float>(row_sum[i] / C);
            r_mean += r[i];
        }
        for (std::int64_t j = 0; j < C; ++j) {
            c[j] = beta * c[j] + (1.f - beta) * static_cast<float>(col_sum[j] / R);
            c_mean += c[j];
        }
        // The statistic along the shorter dim (optax's v_row; the rows when square) is taken
        // relative to its mean.
        const float rm = R > C ? 1.f : static_cast<float>(r_mean / R);
        const float cm = R > C ? static_cast<float>(c_mean / C) : 1.f;
        for (std::int64_t i = 0; i < R; ++i) rs[i] = 1.f / std::sqrt(r[i] / rm);
        for (std::int64_t j = 0; j < C; ++j) cs[j] = 1.f / std::sqrt(c[j] / cm);
    }

    // 2. full second moments, update squares
    for (std::size_t k = 0; k < plan_.pieces.size(); ++k) {
        const AdafactorPiece& p = plan_.pieces[k];
        const AdafactorTensor& t = plan_.tensors[p.tensor];
        const Tensor g = piece(grads, p.offset, p.numel);
        const double s =
            t.factored
                ? ops::adafactor_factored_sumsq(g, run_of(p), piece(scales_.data(), t.stat, t.rows),
                                                piece(scales_.data(), t.stat + t.rows, t.cols))
                : ops::adafactor_moment(piece(v_.data(), piece_v_[k], p.numel), g, beta, eps);
        if (p.counts) u_sq[p.tensor] += s;
    }
    if (tensor_sum_) tensor_sum_(u_sq, T);

    // 3. the step
    const float clip = cfg_.adafactor_clipping_threshold;
    for (std::size_t k = 0; k < plan_.pieces.size(); ++k) {
        const AdafactorPiece& p = plan_.pieces[k];
        const AdafactorTensor& t = plan_.tensors[p.tensor];
        const ParamGroup& g = groups_[piece_group_[k]];
        const double n = static_cast<double>(t.numel());
        const double rms_u = std::sqrt(u_sq[p.tensor] / n);
        const double denom = clip > 0 ? std::max(1.0, rms_u / clip) : 1.0;
        const double scale = cfg_.adafactor_multiply_by_parameter_scale
                                 ? std::max(std::sqrt(p_sq[p.tensor] / n), 1e-3)
                                 : 1.0;
        const float lr_g = group_lr(g, lr);
        const float step = static_cast<float>(lr_g * scale / denom);
        const float decay = 1.f - lr_g * group_decay(g);
        const Tensor pv = piece(params, p.offset, p.numel), gv = piece(grads, p.offset, p.numel);
        if (t.factored)
            ops::adafactor_factored_apply(pv, gv, run_of(p), piece(scales_.data(), t.stat, t.rows),
                                          piece(scales_.data(), t.stat + t.rows, t.cols), step,
                                          decay);
        else
            ops::adafactor_apply(pv, gv, piece(v_.data(), piece_v_[k], p.numel), step, decay);
    }
}

}  // namespace meshlm

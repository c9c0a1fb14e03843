// Optimizer::step for Adafactor over a range that may hold parts of tensors (a ZeRO chunk, a
// tensor-parallel shard): the math is in the adafactor ops (kernels/ops/adafactor.h). Three passes,
// with the ranks' partial sums added up (tensor_sum_) between them, so that every statistic is the
// whole tensor's:
//   1. per factored tensor the row and column sums of g^2 + eps, per tensor the sum of p^2;
//      summed over the ranks; then every rank decays the factored statistics of EVERY tensor
//      (they are replicated, and stay the same on every rank) and derives the update's factors
//      (an op on the optimizer's device: only the sums' means go over, one copy per step)
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

}  // namespace

// A piece of a flat buffer (parameters, gradients, second moments, statistics) on the device.
Tensor Optimizer::piece(const float* base, std::size_t offset, std::size_t numel) const {
    return flat(base + offset, numel, device_);
}

void Optimizer::adafactor_factors(const double* sums, float beta) {
    // The means of the summed statistics (floats, as the statistics), written where the op
    // turns them into the update's factors: scales_ itself, or staged on the host first.
    const std::size_t S = plan_.stat_floats;
    float* means = device_ == Device::cpu ? scales_.data() : means_.data();
    for (const AdafactorTensor& t : plan_.tensors) {
        if (!t.factored) continue;
        const std::int64_t R = t.rows, C = t.cols;
        for (std::int64_t i = 0; i < R; ++i)
            means[t.stat + i] = static_cast<float>(sums[t.stat + i] / C);
        for (std::int64_t j = 0; j < C; ++j)
            means[t.stat + R + j] = static_cast<float>(sums[t.stat + R + j] / R);
    }
    if (device_ != Device::cpu)
        kernels::copy(piece(scales_.data(), 0, S), flat(means, S, Device::cpu));
    for (const AdafactorTensor& t : plan_.tensors) {
        if (!t.factored) continue;
        const std::size_t n = static_cast<std::size_t>(t.rows + t.cols);
        const Tensor scales = piece(scales_.data(), t.stat, n);
        ops::adafactor_factored_scales(piece(stats_.data(), t.stat, n), scales, scales, t.rows,
                                       beta);
    }
}

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
    // The statistic along the shorter dim (optax's v_row; the rows when square) is taken
    // relative to its mean (kernels.h's adafactor_factored_scales).
    adafactor_factors(sums, beta);

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

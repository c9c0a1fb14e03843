// Adafactor (Shazeer & Stern 2018) as optax.adafactor(lr, multiply_by_parameter_scale=True,
// clipping_threshold=1) computes it -- seed 001's optimizer; optax's other defaults: factored,
// decay_rate 0.8, decay_offset 0, eps 1e-30, min_dim_size_to_factor 128, no momentum, no weight
// decay inside. At optimizer step t = 1, 2, ... each WHOLE tensor W with gradient G:
//
//   beta = 1 - t^-decay_rate                     (optax: 1 - (count + 1)^-0.8, count from 0)
//   factored, W [R, C] with min(R, C) >= min_dim_size_to_factor:
//     r_i = beta r_i + (1 - beta) mean_j (G_ij^2 + eps)          [R]  exp_avg_sq_row
//     c_j = beta c_j + (1 - beta) mean_i (G_ij^2 + eps)          [C]  exp_avg_sq_col
//     the statistic along the shorter dim (optax's v_row) is normalized by its mean:
//       R > C:  U_ij = G_ij (c_j / mean(c))^-1/2 r_i^-1/2
//       R <= C: U_ij = G_ij (r_i / mean(r))^-1/2 c_j^-1/2
//     (both are G / sqrt(r_i c_j / mean(r)), the rank-1 fit of the second moment)
//   otherwise (vectors, small matrices):
//     v = beta v + (1 - beta) (G^2 + eps);  U = G / sqrt(v)       exp_avg_sq
//   U = U / max(1, rms(U) / clipping_threshold)                    (clip_by_block_rms)
//   W = W - lr_t max(rms(W), 1e-3) U                               (scale_by_param_block_rms)
// with rms(X) = sqrt(mean of X^2 over the whole tensor), W's taken before the step. meshlm adds
// its weight decay as the other optimizers do (W *= 1 - lr_t wd first, optim.wd_mode) and a
// tensor's muP learning-rate factor multiplies lr_t.
//
// The kernels below are the passes over what a rank holds; the sums (means, RMS) of a tensor
// held by several ranks are added up between them by the optimizer (optim/optimizer.cpp).
// Double sums; each pass is deterministic for a fixed thread count.
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {
namespace {

// The rows of a run: row r of the run (0-based) covers block columns [begin, end).
struct RunRows {
    std::int64_t first_row, rows;  // block rows touched
    MatrixRun run;
    // [begin, end) columns of block row first_row + r and the run element of `begin`.
    void span(std::int64_t r, std::int64_t& begin, std::int64_t& end, std::size_t& k) const {
        const auto w = run.width;
        const auto lo = static_cast<std::int64_t>(run.first),
                   hi = lo + static_cast<std::int64_t>(run.n);
        const std::int64_t row_start = (first_row + r) * w;
        begin = std::max(lo, row_start) - row_start;
        end = std::min(hi, row_start + w) - row_start;
        k = static_cast<std::size_t>(row_start + begin - lo);
    }
};

RunRows rows_of(MatrixRun run) {
    const auto w = run.width;
    const auto first_row = static_cast<std::int64_t>(run.first) / w;
    const auto last_row = (static_cast<std::int64_t>(run.first + run.n) - 1) / w;
    return {first_row, run.n ? last_row - first_row + 1 : 0, run};
}

// sum over r in [0, n) of f(r), in thread order over static row ranges.
template <typename F>
double ordered_sum(std::int64_t n, F&& f) {
    constexpr int kMaxThreads = 256;
    double partial[kMaxThreads] = {};
    int used = 1;
#pragma omp parallel
    {
        const int nt = omp_get_num_threads(), t = omp_get_thread_num();
        if (t == 0) used = nt;
        if (nt <= kMaxThreads) {
            double acc = 0;
            for (std::int64_t r = n * t / nt; r < n * (t + 1) / nt; ++r) acc += f(r);
            partial[t] = acc;
        }
    }
    double total = 0;
    for (int t = 0; t < used; ++t) total += partial[t];
    return total;
}

}  // namespace

void adafactor_factored_sums(const float* g, MatrixRun run, float eps, double* row_sums,
                             double* col_sums) {
    const RunRows rr = rows_of(run);
    // Rows: each row's sum is one thread's.
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rr.rows; ++r) {
        std::int64_t b, e;
        std::size_t k;
        rr.span(r, b, e, k);
        double s = 0;
        for (std::int64_t j = b; j < e; ++j, ++k) s += g[k] * g[k] + eps;
        row_sums[run.row0 + rr.first_row + r] += s;
    }
    // Columns: each thread owns a range of columns and adds the rows in order.
#pragma omp parallel
    {
        const int nt = omp_get_num_threads(), t = omp_get_thread_num();
        const std::int64_t c0 = run.width * t / nt, c1 = run.width * (t + 1) / nt;
        double* cs = col_sums + run.col0;
        for (std::int64_t r = 0; r < rr.rows; ++r) {
            std::int64_t b, e;
            std::size_t k;
            rr.span(r, b, e, k);
            const std::int64_t lo = std::max(b, c0), hi = std::min(e, c1);
            const float* gr = g + k - b;  // gr[j] = g at block column j of this row
            for (std::int64_t j = lo; j < hi; ++j) cs[j] += gr[j] * gr[j] + eps;
        }
    }
}

double adafactor_factored_sumsq(const float* g, MatrixRun run, const float* row_scale,
                                const float* col_scale) {
    const RunRows rr = rows_of(run);
    const float* cs = col_scale + run.col0;
    return ordered_sum(rr.rows, [&](std::int64_t r) {
        std::int64_t b, e;
        std::size_t k;
        rr.span(r, b, e, k);
        const float rs = row_scale[run.row0 + rr.first_row + r];
        const float* gr = g + k - b;
        double s = 0;
        for (std::int64_t j = b; j < e; ++j) {
            const float u = gr[j] * rs * cs[j];
            s += u * u;
        }
        return s;
    });
}

void adafactor_factored_apply(float* p, const float* g, MatrixRun run, const float* row_scale,
                              const float* col_scale, float step, float decay) {
    const RunRows rr = rows_of(run);
    const float* cs = col_scale + run.col0;
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rr.rows; ++r) {
        std::int64_t b, e;
        std::size_t k;
        rr.span(r, b, e, k);
        const float rs = row_scale[run.row0 + rr.first_row + r];
        const float* gr = g + k - b;
        float* pr = p + k - b;
        for (std::int64_t j = b; j < e; ++j) pr[j] = pr[j] * decay - step * (gr[j] * rs * cs[j]);
    }
}

void adafactor_factored_scales(float* stats, float* scales, const float* means, std::int64_t R,
                               std::int64_t C, float beta) {
    float *r = stats, *c = stats + R;
    double r_mean = 0, c_mean = 0;
    for (std::int64_t i = 0; i < R; ++i) {
        r[i] = beta * r[i] + (1.f - beta) * means[i];
        r_mean += r[i];
    }
    for (std::int64_t j = 0; j < C; ++j) {
        c[j] = beta * c[j] + (1.f - beta) * means[R + j];
        c_mean += c[j];
    }
    const float rm = R > C ? 1.f : static_cast<float>(r_mean / R);
    const float cm = R > C ? static_cast<float>(c_mean / C) : 1.f;
    for (std::int64_t i = 0; i < R; ++i) scales[i] = 1.f / std::sqrt(r[i] / rm);
    for (std::int64_t j = 0; j < C; ++j) scales[R + j] = 1.f / std::sqrt(c[j] / cm);
}

double adafactor_moment(float* v, const float* g, std::size_t n, float beta, float eps) {
    constexpr std::int64_t kBlock = 1024;
    const auto blocks = static_cast<std::int64_t>((n + kBlock - 1) / kBlock);
    return ordered_sum(blocks, [&](std::int64_t blk) {
        const std::size_t lo = static_cast<std::size_t>(blk * kBlock);
        const std::size_t hi = std::min(n, lo + static_cast<std::size_t>(kBlock));
        double s = 0;
        for (std::size_t i = lo; i < hi; ++i) {
            const float gi = g[i];
            const float vi = beta * v[i] + (1.f - beta) * (gi * gi + eps);
            v[i] = vi;
            const float u = gi / std::sqrt(vi);
            s += u * u;
        }
        return s;
    });
}

void adafactor_apply(float* p, const float* g, const float* v, std::size_t n, float step,
                     float decay) {
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) p[i] = p[i] * decay - step * (g[i] / std::sqrt(v[i]));
}

}  // namespace meshlm::kernels

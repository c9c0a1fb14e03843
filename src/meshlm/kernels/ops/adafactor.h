// Adafactor's passes over device-tagged views (kernels.h's adafactor_*; cpu/adafactor.cpp has the
// whole algorithm, optim/adafactor.cpp the order of the passes and the sums over the ranks
// between them). g, p, v: f32 views of the n elements a rank holds of one tensor.
//
// A factored tensor's elements come as an AdafactorRun: g's n elements are a row-major block
// [*, width] of the whole tensor from the block's element `first`, and the block's (0, 0) is the
// tensor's (row0, col0). row_scale / col_scale (f32, on g's device) and row_sums / col_sums
// (doubles in host memory) are indexed by the whole tensor's rows and columns.
//
// The sums are doubles on the host, where the optimizer adds them over the ranks: a CUDA pass
// that returns one waits for the device. Each is deterministic (the same inputs give the same
// bits on every call).
#pragma once

#include <cstdint>
#include <span>

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

struct AdafactorRun {
    std::int64_t first = 0, width = 1, row0 = 0, col0 = 0;
};

// row_sums[i] += sum_j (g_ij^2 + eps), col_sums[j] += sum_i (g_ij^2 + eps) over the run.
void adafactor_factored_sums(const Tensor& g, const AdafactorRun& run, float eps,
                             std::span<double> row_sums, std::span<double> col_sums);
// Returns the sum over the run of u_ij^2, u_ij = g_ij * row_scale[i] * col_scale[j].
double adafactor_factored_sumsq(const Tensor& g, const AdafactorRun& run, const Tensor& row_scale,
                                const Tensor& col_scale);
// p_ij = p_ij * decay - step * u_ij over the run (p: g's shape).
void adafactor_factored_apply(const Tensor& p, const Tensor& g, const AdafactorRun& run,
                              const Tensor& row_scale, const Tensor& col_scale, float step,
                              float decay);
// One factored tensor of `rows` rows: its statistics (stats f32 [rows + cols], decayed toward
// means = the row sums / cols, then the column sums / rows, rounded to f32) and the update's
// factors (scales, the same shape): kernels.h's adafactor_factored_scales. One device; means
// may be scales itself (each element is read before its factor overwrites it).
void adafactor_factored_scales(const Tensor& stats, const Tensor& scales, const Tensor& means,
                               std::int64_t rows, float beta);
// A full second moment: v = beta v + (1 - beta) (g^2 + eps); returns sum u^2, u = g / sqrt(v).
double adafactor_moment(const Tensor& v, const Tensor& g, float beta, float eps);
// p = p * decay - step * g / sqrt(v)
void adafactor_apply(const Tensor& p, const Tensor& g, const Tensor& v, float step, float decay);

}  // namespace meshlm::ops

// Adafactor's factored passes on the GPU, kernels.h's adafactor_factored_* (cpu/adafactor.cpp),
// over a MatrixRun: element k of the run is block element first + k, at block row
// (first + k) / width, column (first + k) % width. The sums are deterministic double sums (no
// atomics): a row's in one block tree, a column's over fixed chunks of rows added in order, the
// sum of u^2 through sum_f64.cuh. u_ij = g_ij * row_scale * col_scale is the CPU's bits (two
// products in the same order); the apply step may fuse differently from the CPU (lion.cu).
#include <vector>

#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"
#include "meshlm/kernels/cuda/sum_f64.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kChunkRows = 64;  // rows per partial column sum

// The run's elements in block row `row`: [lo, hi) as run indices (empty when the run skips it).
struct RowSpan {
    std::int64_t lo, hi, col_of_lo;
};
__device__ inline RowSpan row_span(const MatrixRun& run, std::int64_t row) {
    const auto first = static_cast<std::int64_t>(run.first);
    const std::int64_t start = row * run.width, end = start + run.width;
    const std::int64_t lo = max(first, start), hi = min(first + std::int64_t(run.n), end);
    return {lo - first, hi - first, lo - start};
}

// rows_out[r] = sum over block row first_row + r of (g^2 + eps); one block per row.
__global__ void row_sums_kernel(double* rows_out, const float* g, MatrixRun run,
                                std::int64_t first_row, std::int64_t rows, float eps) {
    for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const RowSpan s = row_span(run, first_row + r);
        double acc = 0;
        for (std::int64_t k = s.lo + threadIdx.x; k < s.hi; k += kSumThreads)
            acc += static_cast<double>(g[k] * g[k] + eps);
        acc = block_sum_f64(acc);
        if (threadIdx.x == 0) rows_out[r] = acc;
    }
}

// partial[c * width + j] = the column-j sum over rows [c kChunkRows, (c + 1) kChunkRows).
__global__ void col_chunks_kernel(double* partial, const float* g, MatrixRun run,
                                  std::int64_t first_row, std::int64_t rows, std::int64_t chunks,
                                  float eps) {
    const std::int64_t j = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
    if (j >= run.width) return;
    for (std::int64_t c = blockIdx.y; c < chunks; c += gridDim.y) {
        double acc = 0;
        for (std::int64_t r = c * kChunkRows; r < min(rows, (c + 1) * kChunkRows); ++r) {
            const RowSpan s = row_span(run, first_row + r);
            const std::int64_t k = s.lo + (j - s.col_of_lo);
            if (k >= s.lo && k < s.hi) acc += static_cast<double>(g[k] * g[k] + eps);
        }
        partial[c * run.width + j] = acc;
    }
}

// cols_out[j] = the chunks' column-j sums, in chunk order.
__global__ void col_sums_kernel(double* cols_out, const double* partial, std::int64_t width,
                                std::int64_t chunks) {
    const std::int64_t j = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
    if (j >= width) return;
    double acc = 0;
    for (std::int64_t c = 0; c < chunks; ++c) acc += partial[c * width + j];
    cols_out[j] = acc;
}

__device__ inline float update(const float* g, const MatrixRun& run, const float* row_scale,
                               const float* col_scale, std::size_t k) {
    const auto e = static_cast<std::int64_t>(run.first + k);
    const std::int64_t row = e / run.width, col = e - row * run.width;
    return g[k] * row_scale[run.row0 + row] * col_scale[run.col0 + col];
}

__global__ void sumsq_kernel(double* partials, const float* g, MatrixRun run,
                             const float* row_scale, const float* col_scale) {
    double acc = 0;
    for (std::size_t k = blockIdx.x * std::size_t{kSumThreads} + threadIdx.x; k < run.n;
         k += std::size_t{gridDim.x} * kSumThreads) {
        const float u = update(g, run, row_scale, col_scale, k);
        acc += static_cast<double>(u * u);
    }
    acc = block_sum_f64(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

__global__ void factored_apply_kernel(float* p, const float* g, MatrixRun run,
                                      const float* row_scale, const float* col_scale, float step,
                                      float decay) {
    for (std::size_t k = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; k < run.n;
         k += std::size_t{gridDim.x} * blockDim.x)
        p[k] = p[k] * decay - step * update(g, run, row_scale, col_scale, k);
}

unsigned capped(std::int64_t n, std::int64_t cap) {
    return static_cast<unsigned>(n < 1 ? 1 : (n > cap ? cap : n));
}

}  // namespace

void adafactor_factored_sums(const float* g, MatrixRun run, float eps, double* row_sums,
                             double* col_sums) {
    if (run.n == 0) return;
    const std::int64_t w = run.width, first_row = static_cast<std::int64_t>(run.first) / w;
    const std::int64_t rows = static_cast<std::int64_t>(run.first + run.n - 1) / w - first_row + 1;
    const std::int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
    DeviceDoubles sums(rows + w + chunks * w);  // rows, columns, column chunks
    double *rows_out = sums.data(), *cols_out = rows_out + rows, *partial = cols_out + w;
    row_sums_kernel<<<capped(rows, 65535L * 8), kSumThreads>>>(rows_out, g, run, first_row, rows,
                                                               eps);
    MESHLM_CUDA_LAUNCHED();
    const dim3 grid(capped((w + kThreads - 1) / kThreads, 1L << 30), capped(chunks, 65535));
    col_chunks_kernel<<<grid, kThreads>>>(partial, g, run, first_row, rows, chunks, eps);
    MESHLM_CUDA_LAUNCHED();
    col_sums_kernel<<<capped((w + kThreads - 1) / kThreads, 1L << 30), kThreads>>>(
        cols_out, partial, w, chunks);
    MESHLM_CUDA_LAUNCHED();
    std::vector<double> host(static_cast<std::size_t>(rows + w));
    copy_to_host(host.data(), rows_out, host.size());
    for (std::int64_t r = 0; r < rows; ++r) row_sums[run.row0 + first_row + r] += host[r];
    for (std::int64_t j = 0; j < w; ++j) col_sums[run.col0 + j] += host[rows + j];
}

double adafactor_factored_sumsq(const float* g, MatrixRun run, const float* row_scale,
                                const float* col_scale) {
    if (run.n == 0) return 0;
    const unsigned blocks = sum_blocks(run.n);
    DeviceDoubles partials(blocks);
    sumsq_kernel<<<blocks, kSumThreads>>>(partials.data(), g, run, row_scale, col_scale);
    MESHLM_CUDA_LAUNCHED();
    return sum_to_host(partials.data(), blocks);
}

void adafactor_factored_apply(float* p, const float* g, MatrixRun run, const float* row_scale,
                              const float* col_scale, float step, float decay) {
    if (run.n == 0) return;
    factored_apply_kernel<<<grid_for(run.n, kThreads), kThreads>>>(p, g, run, row_scale, col_scale,
                                                                   step, decay);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda

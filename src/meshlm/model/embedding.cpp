#include "meshlm/model/embedding.h"

#include <algorithm>

#include "meshlm/core/param_layout.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/bf16.h"
#include "meshlm/kernels/ops/embedding.h"
#include "meshlm/model/positions.h"

namespace meshlm {
namespace k = kernels;

VocabShard vocab_shard(int V, int model, int rank) {
    const int rows = static_cast<int>(tp_block_rows(V, model));
    const int first = std::min(V, rank * rows);
    return {first, std::min(V, first + rows) - first, rows};
}

Embedding::Embedding(const ModelConfig& cfg, ModelComm& comm)
    : C(cfg.d_model),
      learned(cfg.position == "learned"),
      scaled_sin(cfg.position == "scaled_sin"),
      lam(cfg.vq_pe_lam),
      mp(&comm) {
    const VocabShard s = vocab_shard(cfg.vocab_size, comm.size(), comm.rank());
    v0 = s.first;
    Vvalid = s.valid;
    if (scaled_sin) {
        table.resize(static_cast<std::size_t>(cfg.max_seq_len) * C);
        for (int p = 0; p < cfg.max_seq_len; ++p)
            sinusoid(table.data() + static_cast<std::size_t>(p) * C, p, C, lam);
    }
}

const float* Embedding::sinusoid_at(std::int64_t p, float* row) const {
    if (p < static_cast<std::int64_t>(table.size() / C))
        return table.data() + static_cast<std::size_t>(p) * C;
    sinusoid(row, p, C, lam);
    return row;
}

void Embedding::forward(float* x, const std::int32_t* tokens, const float* wte, const float* wpe,
                        const float* pe_scale, int N, int T, const std::int64_t* pos0) const {
    const std::size_t NC = static_cast<std::size_t>(N) * C;
    const Tensor xv = view(x, {N, C}, device), tv = view(tokens, {N}, device);
    ops::embedding_forward(xv, tv, view(wte, {Vvalid, C}, device), Tensor{}, T, v0);
    mp->sum(x, NC);  // each row is one rank's wte row (zeros elsewhere): rounding it after is exact
    if (bf16) ops::round_bf16(xv, xv);
    if (learned && !bf16) {
        ops::position_embedding_forward(xv, view(wpe, {T, C}, device), T);
    } else if (learned) {  // bf16: each position's row rounded once, added to its B rows
#pragma omp parallel for schedule(static)
        for (int t = 0; t < T; ++t) {
            thread_local std::vector<float> row;
            row.resize(C);
            k::round_bf16(row.data(), wpe + static_cast<std::size_t>(t) * C, C);
            for (int n = t; n < N; n += T) {
                float* o = x + static_cast<std::size_t>(n) * C;
                for (int c = 0; c < C; ++c) o[c] += row[c];
            }
        }
    }
    if (scaled_sin) {
        float scale = *pe_scale;
        if (bf16) k::round_bf16(&scale, &scale, 1);
#pragma omp parallel for schedule(static)
        for (int n = 0; n < N; ++n) {
            thread_local std::vector<float> row;  // past the table only (decoding, long rows)
            row.resize(C);
            const float* s = sinusoid_at((pos0 ? pos0[n / T] : 0) + n % T, row.data());
            float* o = x + static_cast<std::size_t>(n) * C;
            for (int c = 0; c < C; ++c) o[c] += scale * s[c];
        }
    }
}

void Embedding::backward(float* dwte, float* dwpe, float* dpe_scale, const float* dx,
                         const std::int32_t* tokens, int N, int T, const std::int64_t* pos0) const {
    const Tensor dxv = view(dx, {N, C}, device);
    ops::embedding_backward(view(dwte, {Vvalid, C}, device), Tensor{}, dxv,
                            view(tokens, {N}, device), T, v0);
    if (learned) ops::position_embedding_backward(view(dwpe, {T, C}, device), dxv, T);
    if (scaled_sin) {
        // In row order, in double: the same sum for any thread count.
        thread_local std::vector<float> row;
        row.resize(C);
        double a = 0;
        for (int n = 0; n < N; ++n) {
            const float* s = sinusoid_at((pos0 ? pos0[n / T] : 0) + n % T, row.data());
            const float* g = dx + static_cast<std::size_t>(n) * C;
            for (int c = 0; c < C; ++c) a += static_cast<double>(g[c]) * s[c];
        }
        *dpe_scale += static_cast<float>(a);
    }
}

}  // namespace meshlm

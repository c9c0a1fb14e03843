#include "meshlm/model/embedding.h"

#include <algorithm>
#include <cstdint>

#include "meshlm/core/error.h"
#include "meshlm/core/param_layout.h"
#include "meshlm/kernels/device_buffer.h"
#include "meshlm/kernels/ops/bf16.h"
#include "meshlm/kernels/ops/embedding.h"
#include "meshlm/model/positions.h"

namespace meshlm {

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

// Each batch row's first position as an i32 view, and the table grown to cover every position
// (past max_seq_len only when decoding or continuing carried VQ states).
Tensor Embedding::positions(const std::int64_t* pos0, int N, int T) const {
    const int B = N / T;
    std::int64_t last = T - 1;
    if (pos0) {
        pos32_.resize(B);
        for (int b = 0; b < B; ++b) {
            MESHLM_CHECK(pos0[b] >= 0 && pos0[b] + T <= INT32_MAX, "position ", pos0[b],
                         " outside [0, 2^31 - T)");
            pos32_[b] = static_cast<std::int32_t>(pos0[b]);
            last = std::max(last, pos0[b] + T - 1);
        }
    }
    const auto rows = static_cast<std::int64_t>(table.size() / C);
    if (last >= rows) {
        const std::int64_t grown = std::max(last + 1, 2 * rows);
        table.resize(static_cast<std::size_t>(grown) * C);
        for (std::int64_t p = rows; p < grown; ++p)
            sinusoid(table.data() + static_cast<std::size_t>(p) * C, p, C, lam);
    }
    if (device == Device::cpu) return pos0 ? view(pos32_.data(), {B}, device) : Tensor{};
    const Tensor host =
        view(table.data(), {static_cast<std::int64_t>(table.size() / C), C}, Device::cpu);
    if (!(table_dev_.view().shape == host.shape)) {  // the first pass, or the table grew
        table_dev_ = kernels::DeviceBuffer(device, DType::f32, host.shape);
        kernels::copy(table_dev_.view(), host);
    }
    if (!pos0) return Tensor{};
    if (pos_dev_.view().numel() < B) pos_dev_ = kernels::DeviceBuffer(device, DType::i32, {B});
    const Tensor p = view(static_cast<const std::int32_t*>(pos_dev_.data()), {B}, device);
    kernels::copy(p, view(pos32_.data(), {B}, Device::cpu));
    return p;
}

Tensor Embedding::table_view() const {
    if (device != Device::cpu) return table_dev_.view();
    return view(table.data(), {static_cast<std::int64_t>(table.size() / C), C}, device);
}

void Embedding::forward(float* x, const std::int32_t* tokens, const float* wte, const float* wpe,
                        const float* pe_scale, int N, int T, const std::int64_t* pos0) const {
    const std::size_t NC = static_cast<std::size_t>(N) * C;
    const Tensor xv = view(x, {N, C}, device), tv = view(tokens, {N}, device);
    ops::embedding_forward(xv, tv, view(wte, {Vvalid, C}, device), Tensor{}, T, v0);
    mp->sum(x, NC);  // each row is one rank's wte row (zeros elsewhere): rounding it after is exact
    if (bf16) ops::round_bf16(xv, xv);
    // bf16: each position's row rounded once, as the other weights' copies are
    if (learned) ops::position_embedding_forward(xv, view(wpe, {T, C}, device), T, bf16);
    if (scaled_sin) {
        const Tensor p = positions(pos0, N, T);
        ops::sinusoid_position_forward(xv, table_view(), view(pe_scale, {1}, device), p, T, bf16);
    }
}

void Embedding::backward(float* dwte, float* dwpe, float* dpe_scale, const float* dx,
                         const std::int32_t* tokens, int N, int T, const std::int64_t* pos0) const {
    const Tensor dxv = view(dx, {N, C}, device);
    ops::embedding_backward(view(dwte, {Vvalid, C}, device), Tensor{}, dxv,
                            view(tokens, {N}, device), T, v0);
    if (learned) ops::position_embedding_backward(view(dwpe, {T, C}, device), dxv, T);
    if (scaled_sin) {
        const Tensor p = positions(pos0, N, T);
        ops::sinusoid_position_backward(view(dpe_scale, {1}, device), dxv, table_view(), p, T);
    }
}

}  // namespace meshlm

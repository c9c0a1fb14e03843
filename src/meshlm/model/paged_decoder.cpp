// A pass: the DecodeStack's blocks over the rows (any sequences, any positions), each row's key
// and value going to its block before it attends to its cached positions 0..pos; then the head
// for the rows that ask for logits.
#include "meshlm/model/paged_decoder.h"

#include <cstring>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm {
namespace k = kernels;

PagedDecoder::PagedDecoder(const ModelConfig& cfg, int num_blocks, int block_size, int max_rows,
                           DecodePrecision precision)
    : cfg_(cfg),
      num_blocks_(num_blocks),
      block_size_(block_size),
      stack_(cfg, max_rows >= 1 ? max_rows : 1, precision) {
    MESHLM_CHECK(num_blocks >= 1 && block_size >= 1 && max_rows >= 1,
                 "a paged cache needs blocks, a block size and rows");
    if (cfg.vq())
        MESHLM_INVALID(
            "model.attention vq decodes with constant-size states, not a paged KV "
            "cache: `meshlm sample` generates from it; `meshlm serve` does not yet");
    const Attention& attn = stack_.attention();
    const std::size_t per_layer =
        static_cast<std::size_t>(num_blocks) * attn.Kl * block_size * attn.D;
    for (int l = 0; l < cfg.n_layer; ++l) {
        k_.emplace_back(per_layer);
        v_.emplace_back(per_layer);
    }
}

std::size_t PagedDecoder::block_bytes() const {
    const Attention& attn = stack_.attention();
    return 2 * sizeof(float) * static_cast<std::size_t>(cfg_.n_layer) * attn.Kl * block_size_ *
           attn.D;
}

void PagedDecoder::set_params(const float* params) {
    stack_.set_params(params);
}

const float* PagedDecoder::forward(const DecodeRow* rows, int M) {
    MESHLM_CHECK(stack_.params(), "set_params() before forward()");
    MESHLM_CHECK(M >= 1 && M <= max_rows(), "a pass of ", M, " rows (at most ", max_rows(), ")");
    const int V = cfg_.vocab_size;
    const bool learned = stack_.weights().wpe != nullptr;
    pos_.resize(M);
    lens_.resize(M);
    tables_.resize(M);
    for (int m = 0; m < M; ++m) {
        const DecodeRow& r = rows[m];
        MESHLM_CHECK(r.token >= 0 && r.token < V, "token ", r.token, " outside [0, ", V, ")");
        MESHLM_CHECK(r.pos >= 0 && (!learned || r.pos < cfg_.max_seq_len), "position ", r.pos,
                     " outside the model's context of ", cfg_.max_seq_len);
        pos_[m] = r.pos;
        lens_[m] = r.pos + 1;
        tables_[m] = r.blocks;
        stack_.embed(m, r.token, r.pos);
    }
    const Attention& attn = stack_.attention();
    const int W = attn.qkv_width(), D = attn.D, Kh = attn.Kl, H = attn.Hl;
    const std::size_t head_stride = static_cast<std::size_t>(block_size_) * D;
    const float* slopes = attn.slopes.empty() ? nullptr : attn.slopes.data();
    stack_.blocks(M, pos_.data(), [&](int l, const float* qkv, float* y) {
        for (int m = 0; m < M; ++m) {
            const float* row = qkv + static_cast<std::size_t>(m) * W;
            const int p = pos_[m];
            const std::size_t blk = tables_[m][p / block_size_];
            for (int h = 0; h < Kh; ++h) {
                const std::size_t at =
                    (blk * Kh + h) * head_stride + static_cast<std::size_t>(p % block_size_) * D;
                std::memcpy(k_[l].data() + at, row + (H + h) * D, D * sizeof(float));
                std::memcpy(v_[l].data() + at, row + (H + Kh + h) * D, D * sizeof(float));
            }
        }
        k::attention_paged(y, qkv, W, k_[l].data(), v_[l].data(), tables_.data(), lens_.data(), M,
                           block_size_, H, Kh, D, slopes, attn.scale, &attn.act, attn.dist);
    });
    // Only the rows that want logits go through the final norm and the head, packed.
    int n = 0;
    for (int m = 0; m < M; ++m)
        if (rows[m].logits) stack_.move_row(m, n++);
    if (n == 0) return stack_.logits();
    return stack_.head(n);
}

}  // namespace meshlm

// Per block, for the rows of a pass (any sequences, any positions):
//   ln = norm1(x); qkv = ln Wqkv^T + b; rotate q, k at each row's position; k, v -> its block
//   y = attn(q, the row's cached positions 0..pos); sequential: x += y Wp^T + bp;
//   x += mlp(norm2(x)); parallel: x += (y Wp^T + bp) + mlp(ln)
// then logits = head(norm_f(x)) for the rows that ask for them.
#include "meshlm/model/paged_decoder.h"

#include <cstring>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm {
namespace k = kernels;

PagedDecoder::PagedDecoder(const ModelConfig& cfg, int num_blocks, int block_size, int max_rows,
                           DecodePrecision precision)
    : cfg_(cfg),
      layout_(transformer_layout(cfg)),
      binder_(layout_),
      norm_(cfg),
      attn_(cfg, 1, 0),
      mlp_(cfg, 1),
      num_blocks_(num_blocks),
      block_size_(block_size),
      max_rows_(max_rows),
      precision_(precision) {
    MESHLM_CHECK(num_blocks >= 1 && block_size >= 1 && max_rows >= 1,
                 "a paged cache needs blocks, a block size and rows");
    if (cfg.vq())
        MESHLM_INVALID(
            "model.attention vq decodes with constant-size states, not a paged KV "
            "cache: `meshlm sample` generates from it; `meshlm serve` does not yet");

    const std::size_t R = max_rows, C = cfg.d_model, V = cfg.vocab_size;
    const std::size_t per_layer =
        static_cast<std::size_t>(num_blocks) * attn_.Kl * block_size * attn_.D;
    w_.blocks.resize(cfg.n_layer);
    for (int l = 0; l < cfg.n_layer; ++l) {
        k_.emplace_back(per_layer);
        v_.emplace_back(per_layer);
    }
    x_ = Buffer<float>(R * C);
    ln_ = Buffer<float>(R * C);
    qkv_ = Buffer<float>(R * attn_.qkv_width());
    y_ = Buffer<float>(R * attn_.y_width());
    proj_ = Buffer<float>(R * C);
    h_ = Buffer<float>(R * mlp_.h_width());
    a_ = Buffer<float>(R * mlp_.Fl);
    mlp_out_ = Buffer<float>(R * C);
    mean_ = Buffer<float>(R);
    rstd_ = Buffer<float>(R);
    logits_ = Buffer<float>(R * V);
    if (precision_ == DecodePrecision::bf16) params16_ = Buffer<std::uint16_t>(layout_.total());
}

std::size_t PagedDecoder::block_bytes() const {
    return 2 * sizeof(float) * static_cast<std::size_t>(cfg_.n_layer) * attn_.Kl * block_size_ *
           attn_.D;
}

void PagedDecoder::set_params(const float* params) {
    params_ = params;
    binder_.bind_all(const_cast<float*>(params), w_);
    if (precision_ == DecodePrecision::bf16) k::to_bf16(params16_.data(), params, layout_.total());
}

void PagedDecoder::linear(float* y, const float* x, const float* W, const float* bias, int M, int I,
                          int O) {
    if (precision_ == DecodePrecision::bf16)
        k::linear_decode_bf16(y, x, params16_.data() + (W - params_), bias, M, I, O);
    else
        k::linear_decode(y, x, W, bias, M, I, O);
}

const float* PagedDecoder::forward(const DecodeRow* rows, int M) {
    MESHLM_CHECK(params_, "set_params() before forward()");
    MESHLM_CHECK(M >= 1 && M <= max_rows_, "a pass of ", M, " rows (at most ", max_rows_, ")");
    const int C = cfg_.d_model, V = cfg_.vocab_size, W = attn_.qkv_width();
    const int D = attn_.D, Kh = attn_.Kl, H = attn_.Hl;
    const bool learned = w_.wpe != nullptr;
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
        float* x = x_.data() + static_cast<std::size_t>(m) * C;
        std::memcpy(x, w_.wte + static_cast<std::size_t>(r.token) * C, C * sizeof(float));
        if (learned) {
            const float* p = w_.wpe + static_cast<std::size_t>(r.pos) * C;
            for (int c = 0; c < C; ++c) x[c] += p[c];
        }
    }
    const std::size_t MC = static_cast<std::size_t>(M) * C;
    const std::size_t head_stride = static_cast<std::size_t>(block_size_) * D;
    const float* slopes = attn_.slopes.empty() ? nullptr : attn_.slopes.data();
    const bool parallel = cfg_.block == "parallel";
    for (int l = 0; l < cfg_.n_layer; ++l) {
        const BlockTensors& b = w_.blocks[l];
        norm_.forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), b.ln1_w, b.ln1_b, M);
        linear(qkv_.data(), ln_.data(), b.qkv_w, b.qkv_b, M, C, W);
        attn_.rotate(qkv_.data(), pos_.data(), M, 1);
        for (int m = 0; m < M; ++m) {
            const float* row = qkv_.data() + static_cast<std::size_t>(m) * W;
            const int p = pos_[m];
            const std::size_t blk = tables_[m][p / block_size_];
            for (int h = 0; h < Kh; ++h) {
                const std::size_t at =
                    (blk * Kh + h) * head_stride + static_cast<std::size_t>(p % block_size_) * D;
                std::memcpy(k_[l].data() + at, row + (H + h) * D, D * sizeof(float));
                std::memcpy(v_[l].data() + at, row + (H + Kh + h) * D, D * sizeof(float));
            }
        }
        k::attention_paged(y_.data(), qkv_.data(), W, k_[l].data(), v_[l].data(), tables_.data(),
                           lens_.data(), M, block_size_, H, Kh, D, slopes, attn_.scale, &attn_.act);
        linear(proj_.data(), y_.data(), b.proj_w, b.proj_b, M, attn_.y_width(), C);
        if (!parallel) {
            k::residual_forward(x_.data(), x_.data(), proj_.data(), MC);
            if (!cfg_.has_mlp()) continue;  // a block of attention only
            norm_.forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), b.ln2_w, b.ln2_b, M);
        }
        linear(h_.data(), ln_.data(), b.fc_w, b.fc_b, M, C, mlp_.h_width());
        if (mlp_.gated)
            k::glu_forward(mlp_.act, a_.data(), h_.data(), M, mlp_.Fl);
        else
            k::activation_forward(mlp_.act, a_.data(), h_.data(),
                                  static_cast<std::size_t>(M) * mlp_.Fl);
        linear(mlp_out_.data(), a_.data(), b.out_w, b.out_b, M, mlp_.Fl, C);
        if (parallel) k::residual_forward(mlp_out_.data(), proj_.data(), mlp_out_.data(), MC);
        k::residual_forward(x_.data(), x_.data(), mlp_out_.data(), MC);
    }
    // Only the rows that want logits go through the final norm and the head, packed.
    int n = 0;
    for (int m = 0; m < M; ++m)
        if (rows[m].logits) {
            if (n != m)
                std::memcpy(x_.data() + static_cast<std::size_t>(n) * C,
                            x_.data() + static_cast<std::size_t>(m) * C, C * sizeof(float));
            ++n;
        }
    if (n == 0) return logits_.data();
    norm_.forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), w_.lnf_w, w_.lnf_b, n);
    linear(logits_.data(), ln_.data(), w_.head_w, w_.head_b, n, C, V);
    return logits_.data();
}

}  // namespace meshlm

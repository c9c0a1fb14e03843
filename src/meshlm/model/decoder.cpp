// Decoding steps. Per block, for the rows being decoded (one per sequence):
//   ln = norm1(x); qkv = ln Wqkv^T + b; rotate q, k at the position; k, v -> cache[seq, :, pos]
//   y = attn(q, cache); sequential: x += y Wp^T + bp; x += mlp(norm2(x))
//                       parallel:   x += (y Wp^T + bp) + mlp(ln)
// then logits = head(norm_f(x)).
#include "meshlm/model/decoder.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm {
namespace k = kernels;

Decoder::Decoder(const ModelConfig& cfg, int num_seqs, int max_seq, DecodePrecision precision)
    : cfg_(cfg),
      layout_(transformer_layout(cfg)),
      binder_(layout_),
      norm_(cfg),
      attn_(cfg, 1, 0),
      mlp_(cfg, 1),
      S_(num_seqs),
      max_seq_(max_seq > 0 ? max_seq
               : cfg.vq()  ? std::numeric_limits<int>::max()
                           : cfg.max_seq_len),
      precision_(precision) {
    MESHLM_CHECK(S_ >= 1, "need at least one sequence, got ", S_);
    if (cfg.vq()) {
        if (cfg.position == "learned")
            MESHLM_INVALID(
                "decoding a model.attention vq model with constant memory needs "
                "model.position none or scaled_sin (a learned table ends at max_seq_len)");
        logits_ = Buffer<float>(static_cast<std::size_t>(S_) * cfg.vocab_size);
        return;
    }
    MESHLM_CHECK(max_seq_ <= cfg.max_seq_len || cfg.position != "learned", "cache of ", max_seq_,
                 " positions exceeds max_seq_len ", cfg.max_seq_len);
    const std::size_t S = S_, C = cfg.d_model, V = cfg.vocab_size;
    const std::size_t kv = static_cast<std::size_t>(attn_.Kl) * attn_.D;
    w_.blocks.resize(cfg.n_layer);
    for (int l = 0; l < cfg.n_layer; ++l) {
        k_.emplace_back(S * max_seq_ * kv);
        v_.emplace_back(S * max_seq_ * kv);
    }
    x_ = Buffer<float>(S * C);
    ln_ = Buffer<float>(S * C);
    qkv_ = Buffer<float>(S * attn_.qkv_width());
    y_ = Buffer<float>(S * attn_.y_width());
    proj_ = Buffer<float>(S * C);
    h_ = Buffer<float>(S * mlp_.h_width());
    a_ = Buffer<float>(S * mlp_.Fl);
    mlp_out_ = Buffer<float>(S * C);
    mean_ = Buffer<float>(S);
    rstd_ = Buffer<float>(S);
    logits_ = Buffer<float>(S * V);
    if (precision_ == DecodePrecision::bf16) params16_ = Buffer<std::uint16_t>(layout_.total());
    active_.reserve(S);
    pos_rows_.reserve(S);
}

Decoder::~Decoder() = default;

void Decoder::store_kv(int layer, int seq, int pos, const float* qkv_row) {
    const int D = attn_.D, K = attn_.Kl, H = attn_.Hl;
    for (int h = 0; h < K; ++h) {
        const std::size_t at = ((static_cast<std::size_t>(seq) * K + h) * max_seq_ + pos) * D;
        std::memcpy(k_[layer].data() + at, qkv_row + (H + h) * D, D * sizeof(float));
        std::memcpy(v_[layer].data() + at, qkv_row + (H + K + h) * D, D * sizeof(float));
    }
}

void Decoder::linear(float* y, const float* x, const float* W, const float* bias, int M, int I,
                     int O) {
    if (precision_ == DecodePrecision::bf16)
        k::linear_decode_bf16(y, x, params16_.data() + (W - params_), bias, M, I, O);
    else
        k::linear_decode(y, x, W, bias, M, I, O);
}

std::size_t Decoder::state_bytes() const {
    std::size_t n = 0;
    for (const auto& b : k_) n += b.bytes();
    for (const auto& b : v_) n += b.bytes();
    for (const auto& st : vq_states_)
        n += st.z.size() * sizeof(std::int32_t) +
             (st.v.size() + st.count.size() + st.mean.size()) * sizeof(float);
    return n;
}

const float* Decoder::vq_prefill(const float* params, const std::int32_t* tokens, int T, int rows) {
    const int V = cfg_.vocab_size, L = cfg_.n_layer;
    params_ = params;
    // Pieces of at most max_seq_len tokens: the activations never grow with the prompt.
    const int piece = std::min(T, cfg_.max_seq_len);
    if (!prompt_ || piece > prompt_T_ || std::max(rows, S_) > prompt_rows_) {
        prompt_ = std::make_unique<Transformer>(cfg_, std::max(rows, S_), piece);
        prompt_rows_ = std::max(rows, S_);
        prompt_T_ = piece;
    }
    std::vector<k::VqAttnState> st(static_cast<std::size_t>(L) * rows);
    prompt_->set_vq_states(st.data(), rows);
    vq_tokens_.resize(static_cast<std::size_t>(rows) * piece);
    int n = 0;
    for (int t0 = 0; t0 < T; t0 += n) {
        n = std::min(piece, T - t0);
        for (int r = 0; r < rows; ++r)
            std::memcpy(vq_tokens_.data() + static_cast<std::size_t>(r) * n,
                        tokens + static_cast<std::size_t>(r) * T + t0, n * sizeof(std::int32_t));
        prompt_->forward(params, vq_tokens_.data(), nullptr, rows, n);
    }
    prompt_->set_vq_states(nullptr, 0);
    vq_states_.assign(static_cast<std::size_t>(L) * S_, {});
    for (int l = 0; l < L; ++l)
        for (int s = 0; s < S_; ++s)
            vq_states_[static_cast<std::size_t>(l) * S_ + s] =
                st[static_cast<std::size_t>(l) * rows + (rows == 1 ? 0 : s)];
    for (int s = 0; s < S_; ++s) {
        const int r = rows == 1 ? 0 : s;
        std::memcpy(logits_.data() + static_cast<std::size_t>(s) * V,
                    prompt_->logits() + (static_cast<std::size_t>(r) * n + n - 1) * V,
                    V * sizeof(float));
    }
    pos_ = T;
    return logits_.data();
}

// One token for each active sequence: the prompt model on (M, 1) rows, carrying their states.
const float* Decoder::vq_step(const float* params) {
    const int M = static_cast<int>(active_.size()), L = cfg_.n_layer, V = cfg_.vocab_size;
    vq_active_.resize(static_cast<std::size_t>(L) * M);
    auto swap_states = [&] {
        for (int l = 0; l < L; ++l)
            for (int m = 0; m < M; ++m)
                std::swap(vq_active_[static_cast<std::size_t>(l) * M + m],
                          vq_states_[static_cast<std::size_t>(l) * S_ + active_[m]]);
    };
    swap_states();
    prompt_->set_vq_states(vq_active_.data(), M);
    prompt_->forward(params, vq_tokens_.data(), nullptr, M, 1);
    prompt_->set_vq_states(nullptr, 0);
    swap_states();
    for (int m = 0; m < M; ++m)
        std::memcpy(logits_.data() + static_cast<std::size_t>(active_[m]) * V,
                    prompt_->logits() + static_cast<std::size_t>(m) * V, V * sizeof(float));
    ++pos_;
    return logits_.data();
}

const float* Decoder::prefill(const float* params, const std::int32_t* tokens, int T, int rows) {
    MESHLM_CHECK(T >= 1 && T <= max_seq_, "prompt of ", T, " tokens does not fit a cache of ",
                 max_seq_);
    MESHLM_CHECK(rows == 1 || rows == S_, "prefill rows must be 1 or ", S_, ", got ", rows);
    const int V = cfg_.vocab_size, W = attn_.qkv_width();
    const int N = rows * T;
    for (int n = 0; n < N; ++n)
        MESHLM_CHECK(tokens[n] >= 0 && tokens[n] < V, "token ", tokens[n], " outside [0, ", V, ")");
    if (cfg_.vq()) return vq_prefill(params, tokens, T, rows);
    params_ = params;
    binder_.bind_all(const_cast<float*>(params), w_);
    if (precision_ == DecodePrecision::bf16) k::to_bf16(params16_.data(), params, layout_.total());

    // The prompt runs through the transformer itself; its blocks keep the rotated q | k | v.
    if (!prompt_ || T > prompt_T_ ||
        static_cast<long>(N) > static_cast<long>(prompt_rows_) * prompt_T_) {
        prompt_ = std::make_unique<Transformer>(cfg_, rows, T);
        prompt_rows_ = rows;
        prompt_T_ = T;
    }
    prompt_->forward(params, tokens, nullptr, rows, T);
    for (int l = 0; l < cfg_.n_layer; ++l)
        for (int s = 0; s < S_; ++s) {
            const float* qkv =
                prompt_->block_qkv(l) + static_cast<std::size_t>(rows == 1 ? 0 : s) * T * W;
            for (int t = 0; t < T; ++t) store_kv(l, s, t, qkv + static_cast<std::size_t>(t) * W);
        }
    // Only the last position of each row is the next-token distribution.
    for (int s = 0; s < S_; ++s) {
        const int r = rows == 1 ? 0 : s;
        std::memcpy(logits_.data() + static_cast<std::size_t>(s) * V,
                    prompt_->logits() + (static_cast<std::size_t>(r) * T + T - 1) * V,
                    V * sizeof(float));
    }
    pos_ = T;
    return logits_.data();
}

const float* Decoder::step(const float* params, const std::int32_t* tokens) {
    MESHLM_CHECK(params == params_, "step() must use the parameters given to prefill()");
    MESHLM_CHECK(pos_ < max_seq_, "the cache is full (", max_seq_, " positions)");
    const int C = cfg_.d_model, V = cfg_.vocab_size, W = attn_.qkv_width();
    active_.clear();
    for (int s = 0; s < S_; ++s)
        if (tokens[s] >= 0) {
            MESHLM_CHECK(tokens[s] < V, "token ", tokens[s], " outside [0, ", V, ")");
            active_.push_back(s);
        }
    const int M = static_cast<int>(active_.size());
    if (M == 0) return logits_.data();
    if (cfg_.vq()) {
        vq_tokens_.resize(M);
        for (int m = 0; m < M; ++m) vq_tokens_[m] = tokens[active_[m]];
        return vq_step(params);
    }
    const std::size_t MC = static_cast<std::size_t>(M) * C;
    pos_rows_.assign(M, pos_);

    for (int m = 0; m < M; ++m) {
        const float* e = w_.wte + static_cast<std::size_t>(tokens[active_[m]]) * C;
        float* x = x_.data() + static_cast<std::size_t>(m) * C;
        std::memcpy(x, e, C * sizeof(float));
        if (w_.wpe) {
            const float* p = w_.wpe + static_cast<std::size_t>(pos_) * C;
            for (int c = 0; c < C; ++c) x[c] += p[c];
        }
    }
    const float* slopes = attn_.slopes.empty() ? nullptr : attn_.slopes.data();
    const bool parallel = cfg_.block == "parallel";
    for (int l = 0; l < cfg_.n_layer; ++l) {
        const BlockTensors& b = w_.blocks[l];
        norm_.forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), b.ln1_w, b.ln1_b, M);
        linear(qkv_.data(), ln_.data(), b.qkv_w, b.qkv_b, M, C, W);
        attn_.rotate(qkv_.data(), pos_rows_.data(), M, 1);
        for (int m = 0; m < M; ++m)
            store_kv(l, active_[m], pos_, qkv_.data() + static_cast<std::size_t>(m) * W);
        k::attention_decode(y_.data(), qkv_.data(), W, k_[l].data(), v_[l].data(), active_.data(),
                            M, pos_ + 1, max_seq_, attn_.Hl, attn_.Kl, attn_.D, slopes, attn_.scale,
                            &attn_.act);
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
    norm_.forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), w_.lnf_w, w_.lnf_b, M);
    linear(logits_.data(), ln_.data(), w_.head_w, w_.head_b, M, C, V);
    // Rows were computed packed (row m for sequence active_[m] >= m): move them into place,
    // last first so no row is overwritten before it moves.
    for (int m = M - 1; m >= 0; --m)
        if (active_[m] != m)
            std::memcpy(logits_.data() + static_cast<std::size_t>(active_[m]) * V,
                        logits_.data() + static_cast<std::size_t>(m) * V, V * sizeof(float));
    ++pos_;
    return logits_.data();
}

}  // namespace meshlm

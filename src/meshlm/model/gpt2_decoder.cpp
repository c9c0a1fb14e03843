// GPT-2 decoding with a KV cache. Per block, for the rows being decoded (one per sequence):
//   ln = LN1(x); qkv = ln W_qkv^T + b; k, v -> cache[seq, :, pos]; atty = attn(q, cache)
//   x += atty W_ap^T + b;  x += gelu(LN2(x) W_fc^T + b) W_mp^T + b
// then logits = LN_f(x) wte^T. The prefill runs the same block over a whole prompt with the
// training kernels (sgemm, causal attention) and writes every position's k, v to the cache.
#include "meshlm/model/gpt2_decoder.h"

#include <algorithm>
#include <cstring>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm {
namespace k = kernels;

GPT2Decoder::GPT2Decoder(const ModelConfig& cfg, int num_seqs, int max_seq,
                         DecodePrecision precision)
    : cfg_(cfg),
      layout_(gpt2_layout(cfg)),
      S_(num_seqs),
      max_seq_(max_seq > 0 ? max_seq : cfg.max_seq_len),
      precision_(precision) {
    MESHLM_CHECK(S_ >= 1, "need at least one sequence, got ", S_);
    MESHLM_CHECK(max_seq_ <= cfg.max_seq_len, "cache of ", max_seq_,
                 " positions exceeds max_seq_len ", cfg.max_seq_len);
    const std::size_t S = S_, C = cfg.d_model, F = cfg.mlp_width(), V = cfg.vocab_size;
    w_.blocks.resize(cfg.n_layer);
    for (int l = 0; l < cfg.n_layer; ++l) {
        k_.emplace_back(S * max_seq_ * C);
        v_.emplace_back(S * max_seq_ * C);
    }
    x_ = Buffer<float>(S * C);
    ln_ = Buffer<float>(S * C);
    qkv_ = Buffer<float>(S * 3 * C);
    atty_ = Buffer<float>(S * C);
    proj_ = Buffer<float>(S * C);
    fch_ = Buffer<float>(S * F);
    mean_ = Buffer<float>(S);
    rstd_ = Buffer<float>(S);
    logits_ = Buffer<float>(S * V);
    if (precision_ == DecodePrecision::bf16) params16_ = Buffer<std::uint16_t>(layout_.total());
    active_.reserve(S);
}

void GPT2Decoder::store_kv(int layer, int seq, int pos, const float* qkv_row) {
    const int C = cfg_.d_model, H = cfg_.n_head, D = C / H;
    for (int h = 0; h < H; ++h) {
        const std::size_t at = ((static_cast<std::size_t>(seq) * H + h) * max_seq_ + pos) * D;
        std::memcpy(k_[layer].data() + at, qkv_row + C + h * D, D * sizeof(float));
        std::memcpy(v_[layer].data() + at, qkv_row + 2 * C + h * D, D * sizeof(float));
    }
}

void GPT2Decoder::linear(float* y, const float* x, const float* W, const float* bias, int M, int I,
                         int O) {
    if (precision_ == DecodePrecision::bf16)
        k::linear_decode_bf16(y, x, params16_.data() + (W - params_), bias, M, I, O);
    else
        k::linear_decode(y, x, W, bias, M, I, O);
}

const float* GPT2Decoder::prefill(const float* params, const std::int32_t* tokens, int T,
                                  int rows) {
    MESHLM_CHECK(T >= 1 && T <= max_seq_, "prompt of ", T, " tokens does not fit a cache of ",
                 max_seq_);
    MESHLM_CHECK(rows == 1 || rows == S_, "prefill rows must be 1 or ", S_, ", got ", rows);
    const int C = cfg_.d_model, F = cfg_.mlp_width(), V = cfg_.vocab_size, H = cfg_.n_head;
    const int N = rows * T;
    const float eps = cfg_.ln_eps;
    for (int n = 0; n < N; ++n)
        MESHLM_CHECK(tokens[n] >= 0 && tokens[n] < V, "token ", tokens[n], " outside [0, ", V, ")");
    params_ = params;
    bind_weights(layout_, const_cast<float*>(params), w_);
    if (precision_ == DecodePrecision::bf16) k::to_bf16(params16_.data(), params, layout_.total());

    const std::size_t NC = static_cast<std::size_t>(N) * C;
    for (auto* b : {&px_, &pln_, &patty_, &pproj_}) b->resize(NC);
    pqkv_.resize(3 * NC);
    pfch_.resize(static_cast<std::size_t>(N) * F);
    plse_.resize(static_cast<std::size_t>(N) * H);
    pmean_.resize(N);
    prstd_.resize(N);

    k::embedding_forward(px_.data(), tokens, w_.wte, w_.wpe, N, T, C);
    for (int l = 0; l < cfg_.n_layer; ++l) {
        const BlockWeights& bw = w_.blocks[l];
        k::layernorm_forward(pln_.data(), pmean_.data(), prstd_.data(), px_.data(), bw.ln1_w,
                             bw.ln1_b, N, C, eps);
        k::linear_forward(pqkv_.data(), pln_.data(), bw.qkv_w, bw.qkv_b, N, C, 3 * C);
        k::attention_forward(patty_.data(), plse_.data(), pqkv_.data(), rows, T, H, H, C / H,
                             nullptr);
        for (int s = 0; s < S_; ++s) {
            const float* qkv =
                pqkv_.data() + static_cast<std::size_t>(rows == 1 ? 0 : s) * T * 3 * C;
            for (int t = 0; t < T; ++t)
                store_kv(l, s, t, qkv + static_cast<std::size_t>(t) * 3 * C);
        }
        k::linear_forward(pproj_.data(), patty_.data(), bw.attn_proj_w, bw.attn_proj_b, N, C, C);
        k::residual_forward(px_.data(), px_.data(), pproj_.data(), NC);
        k::layernorm_forward(pln_.data(), pmean_.data(), prstd_.data(), px_.data(), bw.ln2_w,
                             bw.ln2_b, N, C, eps);
        k::linear_forward(pfch_.data(), pln_.data(), bw.fc_w, bw.fc_b, N, C, F);
        k::activation_forward(k::Act::gelu_tanh, pfch_.data(), pfch_.data(),
                              static_cast<std::size_t>(N) * F);
        k::linear_forward(pproj_.data(), pfch_.data(), bw.mlp_proj_w, bw.mlp_proj_b, N, F, C);
        k::residual_forward(px_.data(), px_.data(), pproj_.data(), NC);
    }
    // Only the last position of each row needs logits.
    for (int r = 0; r < rows; ++r)
        std::memcpy(x_.data() + static_cast<std::size_t>(r) * C,
                    px_.data() + (static_cast<std::size_t>(r) * T + T - 1) * C, C * sizeof(float));
    k::layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), w_.lnf_w, w_.lnf_b,
                         rows, C, eps);
    k::linear_decode(logits_.data(), ln_.data(), w_.wte, nullptr, rows, C, V);
    for (int s = 1; s < S_ && rows == 1; ++s)
        std::memcpy(logits_.data() + static_cast<std::size_t>(s) * V, logits_.data(),
                    V * sizeof(float));
    pos_ = T;
    return logits_.data();
}

const float* GPT2Decoder::step(const float* params, const std::int32_t* tokens) {
    MESHLM_CHECK(params == params_, "step() must use the parameters given to prefill()");
    MESHLM_CHECK(pos_ < max_seq_, "the cache is full (", max_seq_, " positions)");
    const int C = cfg_.d_model, F = cfg_.mlp_width(), V = cfg_.vocab_size, H = cfg_.n_head;
    const float eps = cfg_.ln_eps;
    active_.clear();
    for (int s = 0; s < S_; ++s)
        if (tokens[s] >= 0) {
            MESHLM_CHECK(tokens[s] < V, "token ", tokens[s], " outside [0, ", V, ")");
            active_.push_back(s);
        }
    const int M = static_cast<int>(active_.size());
    if (M == 0) return logits_.data();
    const std::size_t MC = static_cast<std::size_t>(M) * C;

    for (int m = 0; m < M; ++m) {
        const float* e = w_.wte + static_cast<std::size_t>(tokens[active_[m]]) * C;
        const float* p = w_.wpe + static_cast<std::size_t>(pos_) * C;
        float* x = x_.data() + static_cast<std::size_t>(m) * C;
        for (int c = 0; c < C; ++c) x[c] = e[c] + p[c];
    }
    for (int l = 0; l < cfg_.n_layer; ++l) {
        const BlockWeights& bw = w_.blocks[l];
        k::layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), bw.ln1_w, bw.ln1_b,
                             M, C, eps);
        linear(qkv_.data(), ln_.data(), bw.qkv_w, bw.qkv_b, M, C, 3 * C);
        for (int m = 0; m < M; ++m)
            store_kv(l, active_[m], pos_, qkv_.data() + static_cast<std::size_t>(m) * 3 * C);
        k::attention_decode(atty_.data(), qkv_.data(), 3 * C, k_[l].data(), v_[l].data(),
                            active_.data(), M, pos_ + 1, max_seq_, H, H, C / H, nullptr);
        linear(proj_.data(), atty_.data(), bw.attn_proj_w, bw.attn_proj_b, M, C, C);
        k::residual_forward(x_.data(), x_.data(), proj_.data(), MC);
        k::layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), bw.ln2_w, bw.ln2_b,
                             M, C, eps);
        linear(fch_.data(), ln_.data(), bw.fc_w, bw.fc_b, M, C, F);
        k::activation_forward(k::Act::gelu_tanh, fch_.data(), fch_.data(),
                              static_cast<std::size_t>(M) * F);
        linear(proj_.data(), fch_.data(), bw.mlp_proj_w, bw.mlp_proj_b, M, F, C);
        k::residual_forward(x_.data(), x_.data(), proj_.data(), MC);
    }
    k::layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), w_.lnf_w, w_.lnf_b, M,
                         C, eps);
    linear(logits_.data(), ln_.data(), w_.wte, nullptr, M, C, V);
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

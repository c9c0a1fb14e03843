// Decoding steps: the DecodeStack's blocks over one row per active sequence, whose keys and
// values go to cache[seq, :, pos] before single-query attention over the cache.
#include "meshlm/model/decoder.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "meshlm/core/error.h"
#include "meshlm/kernels/ops/attention_decode.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm {
namespace k = kernels;

Decoder::Decoder(const ModelConfig& cfg, int num_seqs, int max_seq, DecodePrecision precision,
                 Device device)
    : cfg_(for_inference(cfg)),
      S_(num_seqs),
      max_seq_(max_seq > 0 ? max_seq
               : cfg.vq()  ? std::numeric_limits<int>::max()
                           : cfg.max_seq_len),
      stack_(cfg_, std::max(num_seqs, 1), precision, device),
      seq_ids_(device),
      pos_ids_(device),
      active_ids_(device) {
    MESHLM_CHECK(S_ >= 1, "need at least one sequence, got ", S_);
    if (cfg.vq()) {
        if (cfg.position == "learned")
            MESHLM_INVALID(
                "decoding a model.attention vq model with constant memory needs "
                "model.position none or scaled_sin (a learned table ends at max_seq_len)");
        return;
    }
    MESHLM_CHECK(max_seq_ <= cfg.max_seq_len || cfg.position != "learned", "cache of ", max_seq_,
                 " positions exceeds max_seq_len ", cfg.max_seq_len);
    const std::size_t S = S_;
    const std::size_t kv = static_cast<std::size_t>(stack_.attention().Kl) * stack_.attention().D;
    for (int l = 0; l < cfg.n_layer; ++l) {
        k_.emplace_back(device, S * max_seq_ * kv);
        v_.emplace_back(device, S * max_seq_ * kv);
    }
    active_.reserve(S);
    pos_rows_.reserve(S);
}

Decoder::~Decoder() = default;

void Decoder::store_kv(int layer, const float* qkv, const std::int32_t* seq,
                       const std::int32_t* pos, int M) {
    const Attention& attn = stack_.attention();
    const Device d = attn.device;
    const Tensor k = view(k_[layer].data(), {S_, attn.Kl, max_seq_, attn.D}, d);
    ops::kv_store(k, view(v_[layer].data(), k.shape, d), view(qkv, {M, attn.qkv_width()}, d),
                  view(seq_ids_.put(seq, M), {M, 1}, d), view(pos_ids_.put(pos, M), {M}, d),
                  attn.Hl);
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
    params_ = run_params_ = params;  // (on the CPU: VQ decodes nowhere else yet)
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
        std::memcpy(stack_.logits() + static_cast<std::size_t>(s) * V,
                    prompt_->logits() + (static_cast<std::size_t>(r) * n + n - 1) * V,
                    V * sizeof(float));
    }
    pos_ = T;
    return logits_ = stack_.logits();
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
        std::memcpy(stack_.logits() + static_cast<std::size_t>(active_[m]) * V,
                    prompt_->logits() + static_cast<std::size_t>(m) * V, V * sizeof(float));
    ++pos_;
    return logits_ = stack_.logits();
}

const float* Decoder::prefill(const float* params, const std::int32_t* tokens, int T, int rows) {
    MESHLM_CHECK(T >= 1 && T <= max_seq_, "prompt of ", T, " tokens does not fit a cache of ",
                 max_seq_);
    MESHLM_CHECK(rows == 1 || rows == S_, "prefill rows must be 1 or ", S_, ", got ", rows);
    const int V = cfg_.vocab_size, W = stack_.attention().qkv_width();
    const int N = rows * T;
    for (int n = 0; n < N; ++n)
        MESHLM_CHECK(tokens[n] >= 0 && tokens[n] < V, "token ", tokens[n], " outside [0, ", V, ")");
    if (cfg_.vq()) return vq_prefill(params, tokens, T, rows);
    params_ = params;
    stack_.set_params(params);
    run_params_ = stack_.params();  // the device's copy off the CPU
    const Device d = device();

    // The prompt runs through the transformer itself; its blocks keep the rotated q | k | v.
    if (!prompt_ || T > prompt_T_ ||
        static_cast<long>(N) > static_cast<long>(prompt_rows_) * prompt_T_) {
        prompt_ = std::make_unique<Transformer>(cfg_, rows, T, nullptr, Recompute::none,
                                                Precision::fp32, d);
        prompt_rows_ = rows;
        prompt_T_ = T;
    }
    prompt_->forward(run_params_, tokens, nullptr, rows, T);
    // Each sequence's T positions, from its prompt row (row 0 for all when rows == 1).
    std::vector<std::int32_t> seq(T), pos(T);
    for (int t = 0; t < T; ++t) pos[t] = t;
    for (int s = 0; s < S_; ++s) {
        std::fill(seq.begin(), seq.end(), s);
        const std::size_t row = static_cast<std::size_t>(rows == 1 ? 0 : s) * T * W;
        for (int l = 0; l < cfg_.n_layer; ++l)
            store_kv(l, prompt_->block_qkv(l) + row, seq.data(), pos.data(), T);
    }
    // Only the last position of each row is the next-token distribution.
    const auto row = [&](const float* at, std::size_t r) { return view(at + r * V, {1, V}, d); };
    for (int s = 0; s < S_; ++s) {
        const std::size_t r = rows == 1 ? 0 : s;
        kernels::copy(row(stack_.logits(), s), row(prompt_->logits(), r * T + T - 1));
    }
    pos_ = T;
    return logits_ = stack_.host_logits(S_);
}

const float* Decoder::step(const float* params, const std::int32_t* tokens) {
    MESHLM_CHECK(params == params_, "step() must use the parameters given to prefill()");
    params = run_params_;
    MESHLM_CHECK(pos_ < max_seq_, "the cache is full (", max_seq_, " positions)");
    const int V = cfg_.vocab_size;
    active_.clear();
    for (int s = 0; s < S_; ++s)
        if (tokens[s] >= 0) {
            MESHLM_CHECK(tokens[s] < V, "token ", tokens[s], " outside [0, ", V, ")");
            active_.push_back(s);
        }
    const int M = static_cast<int>(active_.size());
    if (M == 0) return logits_;
    if (cfg_.vq()) {
        vq_tokens_.resize(M);
        for (int m = 0; m < M; ++m) vq_tokens_[m] = tokens[active_[m]];
        return vq_step(params);
    }
    pos_rows_.assign(M, pos_);
    step_tokens_.resize(M);
    for (int m = 0; m < M; ++m) step_tokens_[m] = tokens[active_[m]];
    stack_.embed(M, step_tokens_.data(), pos_rows_.data());
    const Attention& attn = stack_.attention();
    const int W = attn.qkv_width();
    const Tensor slopes = attn.slopes_view();
    const Device d = attn.device;
    const Tensor seqs = view(active_ids_.put(active_.data(), M), {M}, d);
    stack_.blocks(M, pos_rows_.data(), [&](int l, const float* qkv, float* y) {
        store_kv(l, qkv, active_.data(), pos_rows_.data(), M);
        const Tensor kcache = view(k_[l].data(), {S_, attn.Kl, max_seq_, attn.D}, d);
        ops::attention_decode(view(y, {M, attn.y_width()}, d), view(qkv, {M, W}, d), kcache,
                              view(v_[l].data(), kcache.shape, d), seqs, pos_ + 1, slopes,
                              {.H = attn.Hl,
                               .Hkv = attn.Kl,
                               .scale = attn.scale,
                               .act = attn.act,
                               .dist = attn.dist});
    });
    stack_.head(M);
    float* logits = stack_.host_logits(M);
    // Rows were computed packed (row m for sequence active_[m] >= m): move them into place,
    // last first so no row is overwritten before it moves.
    for (int m = M - 1; m >= 0; --m)
        if (active_[m] != m)
            std::memcpy(logits + static_cast<std::size_t>(active_[m]) * V,
                        logits + static_cast<std::size_t>(m) * V, V * sizeof(float));
    ++pos_;
    return logits_ = logits;
}

}  // namespace meshlm

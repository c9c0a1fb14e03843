// A pass: the DecodeStack's blocks over the rows (any sequences, any positions), each row's key
// and value going to its block before it attends to its cached positions 0..pos; then the head
// for the rows that ask for logits.
#include "meshlm/model/paged_decoder.h"

#include <algorithm>

#include "meshlm/core/error.h"
#include "meshlm/kernels/ops/attention_decode.h"

namespace meshlm {
PagedDecoder::PagedDecoder(const ModelConfig& cfg, int num_blocks, int block_size, int max_rows,
                           DecodePrecision precision, Device device)
    : cfg_(for_inference(cfg)),
      num_blocks_(num_blocks),
      block_size_(block_size),
      stack_(cfg_, max_rows >= 1 ? max_rows : 1, precision, device),
      tables_ids_(device),
      pos_ids_(device),
      lens_ids_(device) {
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
        k_.emplace_back(device, per_layer);
        v_.emplace_back(device, per_layer);
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
    // A dense [M, n] block table for the ops (each row's blocks up to its position).
    int n = 1;
    for (int m = 0; m < M; ++m) n = std::max(n, rows[m].pos / block_size_ + 1);
    tokens_.resize(M);
    pos_.resize(M);
    lens_.resize(M);
    tables_.assign(static_cast<std::size_t>(M) * n, 0);
    for (int m = 0; m < M; ++m) {
        const DecodeRow& r = rows[m];
        MESHLM_CHECK(r.token >= 0 && r.token < V, "token ", r.token, " outside [0, ", V, ")");
        MESHLM_CHECK(r.pos >= 0 && (!learned || r.pos < cfg_.max_seq_len), "position ", r.pos,
                     " outside the model's context of ", cfg_.max_seq_len);
        tokens_[m] = r.token;
        pos_[m] = r.pos;
        lens_[m] = r.pos + 1;
        std::copy_n(r.blocks, r.pos / block_size_ + 1,
                    tables_.data() + static_cast<std::size_t>(m) * n);
    }
    stack_.embed(M, tokens_.data(), pos_.data());
    const Attention& attn = stack_.attention();
    const Device d = attn.device;
    const int W = attn.qkv_width();
    const Tensor slopes = attn.slopes_view();
    const Tensor tables = view(tables_ids_.put(tables_.data(), tables_.size()), {M, n}, d);
    const Tensor pos = view(pos_ids_.put(pos_.data(), M), {M}, d);
    const Tensor lens = view(lens_ids_.put(lens_.data(), M), {M}, d);
    stack_.blocks(M, pos_.data(), [&](int l, const float* qkv, float* y) {
        const Tensor q = view(qkv, {M, W}, d);
        const Tensor kp = view(k_[l].data(), {num_blocks_, attn.Kl, block_size_, attn.D}, d);
        const Tensor vp = view(v_[l].data(), kp.shape, d);
        ops::kv_store(kp, vp, q, tables, pos, attn.Hl);
        ops::attention_paged(view(y, {M, attn.y_width()}, d), q, kp, vp, tables, lens, slopes,
                             {.H = attn.Hl,
                              .Hkv = attn.Kl,
                              .scale = attn.scale,
                              .act = attn.act,
                              .dist = attn.dist});
    });
    // Only the rows that want logits go through the final norm and the head, packed.
    int wanted = 0;
    for (int m = 0; m < M; ++m)
        if (rows[m].logits) stack_.move_row(m, wanted++);
    if (wanted == 0) return stack_.host_logits(0);
    stack_.head(wanted);
    return stack_.host_logits(wanted);
}

}  // namespace meshlm

#include "meshlm/train/step_driver.h"

#include <algorithm>

#include "meshlm/core/trace.h"
#include "meshlm/parallel/bucketed.h"

namespace meshlm {

StepDriver::StepDriver(Transformer& model, ParamState& state, Comm& dp, const ModelConfig& cfg,
                       const ParamLayout& layout, int batch, int seq)
    : model_(model),
      state_(state),
      dp_(dp),
      cfg_(cfg),
      layout_(layout),
      batch_(batch),
      seq_(seq),
      reducer_(dp, kGradBucketFloats) {
    block_ranges_.assign(cfg.n_layer, {layout.total(), 0});
    for (const ParamSlice& s : layout.slices())
        if (s.layer >= 0) {
            auto& [lo, hi] = block_ranges_[s.layer];
            lo = std::min(lo, s.offset);
            hi = std::max(hi, s.offset + s.numel);
        }
    if (state.fsdp()) {
        masked_row_.assign(2 * static_cast<std::size_t>(seq), 0);
        std::fill_n(masked_row_.begin() + seq, seq, -1);
    }
}

float StepDriver::accumulate(const std::int32_t* tokens, const std::int32_t* targets, int micro,
                             int B, int T, long step) {
    const bool streamed = state_.streamed();
    if (streamed) state_.stream()->begin(true);
    const bool distributed = dp_.size() > 1;
    const std::size_t per = static_cast<std::size_t>(B) * T;
    // The gradient of the mean over all scored targets of the step: every micro-batch's
    // per-token gradients are scaled by 1 / (scored targets of the whole step, all ranks).
    std::int64_t scored = 0;
    for (std::size_t i = 0; i < per * micro; ++i) scored += targets[i] >= 0;
    if (distributed) dp_.host().all_reduce_sum(&scored, 1);
    const float grad_scale = scored ? 1.f / static_cast<float>(scored) : 0.f;
    double loss = 0;
    const bool overlap = distributed && state_.plan().stage <= 1;
    if (overlap) reducer_.begin(state_.grads(), state_.grad_floats());
    if (diag_)
        diag_->start_step(targets, per, micro, scored, distributed, overlap,
                          state_.tensor_parallel());
    for (int m = 0; m < micro; ++m) {
        const std::int32_t* tg = targets + m * per;
        std::size_t n = 0;
        for (std::size_t i = 0; i < per; ++i) n += tg[i] >= 0;
        // On several ranks every micro-batch runs, scored or not: the streamed gathers and
        // reductions (stages 2-3) and the per-block all-reduces of the backward hook (stages 0-1)
        // are collectives whose sequence must be the same on every rank. (`scored` is global:
        // a step with nothing to score is skipped by every rank alike.)
        if (n == 0 && (!distributed || scored == 0)) continue;
        loss += micro_step(tokens + m * per, tg, m, micro, B, T, n, grad_scale, overlap, step);
    }
    if (overlap && diag_) diag_->rank_rest(layout_, state_.grads(), block_ranges_, state_.device());
    if (overlap) reducer_.finish();
    if (streamed) state_.stream()->end();
    state_.zero_null_ranges();
    if (distributed) dp_.host().all_reduce_sum(&loss, 1);
    const float mean = scored ? static_cast<float>(loss / static_cast<double>(scored)) : 0.f;
    if (!overlap && !streamed) state_.reduce_gradients();
    return mean;
}

double StepDriver::micro_step(const std::int32_t* tokens, const std::int32_t* targets, int m,
                              int micro, int B, int T, std::size_t n, float grad_scale,
                              bool overlap, long step) {
    model_.set_dropout_key(drop_seed_, step,
                           drop_row0_ + static_cast<std::int64_t>(m) * B * dp_.size());
    if (carry_.on()) model_.set_vq_states(carry_.states(m, micro, cfg_.n_layer, B), B);
    float mean;
    {
        TraceScope trace("forward");
        mean = model_.forward(state_.params(), tokens, targets, B, T, grad_scale);
    }
    const double loss = static_cast<double>(mean) * static_cast<double>(n);
    // On the last micro-batch each block's gradients are final when its backward ends.
    if (overlap && m == micro - 1)
        model_.set_block_backward_hook([this](int layer) {
            const auto [lo, hi] = block_ranges_[layer];
            if (diag_) diag_->rank_range(layout_, state_.grads(), lo, hi, state_.device());
            reducer_.ready(lo, hi);
        });
    {
        TraceScope trace("backward");
        model_.backward(state_.params(), state_.grads());
    }
    if (diag_) diag_->micro_done(m, layout_, state_.grads(), state_.device());
    if (carry_.on()) model_.set_vq_states(nullptr, 0);
    if (overlap) model_.set_block_backward_hook({});
    return loss;
}

float StepDriver::eval_forward(const std::int32_t* tokens, const std::int32_t* targets, int B,
                               int T) {
    if (state_.fsdp()) {
        state_.stream()->begin(false);
        const float loss = model_.forward(nullptr, tokens, targets, B, T, 0.f);
        state_.stream()->end();
        return loss;
    }
    state_.sync_params();
    return model_.forward(state_.params(), tokens, targets, B, T, 0.f);
}

const float* StepDriver::eval_losses(const std::int32_t* tokens, const std::int32_t* targets, int B,
                                     int T) {
    if (T > seq_ && cfg_.vq()) {  // rows of several model.vq.update_len chunks
        if (!eval_chunks_)
            eval_chunks_ = std::make_unique<ChunkedLosses>(
                model_, seq_, [this](const std::int32_t* tk, const std::int32_t* tg, int b, int u) {
                    return eval_losses(tk, tg, b, u);
                });
        return (*eval_chunks_)(tokens, targets, B, T);
    }
    if (B == 0) {
        if (state_.fsdp()) eval_forward(masked_row_.data(), masked_row_.data() + seq_, 1, T);
        return nullptr;
    }
    eval_forward(tokens, targets, B, T);
    return model_.losses();
}

}  // namespace meshlm

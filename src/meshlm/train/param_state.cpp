#include "meshlm/train/param_state.h"

#include <algorithm>
#include <cstring>

#include "meshlm/core/trace.h"
#include "meshlm/kernels/device.h"
#include "meshlm/kernels/ops/clip.h"
#include "meshlm/kernels/ops/elementwise.h"
#include "meshlm/model/transformer_layout.h"
#include "meshlm/parallel/bucketed.h"
#include "meshlm/parallel/tp_shard.h"

namespace meshlm {

namespace {
// ema_update (core/param_layout.h) with the ops, for parameters and gradients on a device:
// p = keep p + (1 - keep) g, then g = 0 over [begin, end) (an FMA apart from the CPU's loop).
void ema_update_on(Device d, const ParamLayout& layout, float* params, float* grads,
                   std::size_t begin, std::size_t end) {
    for (const ParamSlice& s : layout.slices()) {
        if (s.ema_decay <= 0.f) continue;
        const std::size_t lo = std::max(begin, s.offset), hi = std::min(end, s.offset + s.numel);
        if (lo >= hi) continue;
        const Shape n{static_cast<std::int64_t>(hi - lo)};
        const Tensor p = view(params + (lo - begin), n, d), g = view(grads + (lo - begin), n, d);
        ops::scale(p, s.ema_decay);
        ops::axpy(p, g, 1.f - s.ema_decay);
        ops::fill(g, 0.f);
    }
}

// Zeroes the null-gradient ranges (ParamSlice::null_grad_begin) of [begin, end) of `layout`,
// `grads` at element begin, on `device`.
void zero_null_on(Device device, const ParamLayout& layout, float* grads, std::size_t begin,
                  std::size_t end) {
    if (device == Device::cpu) {
        zero_null_grads(layout, grads, begin, end);
        return;
    }
    for (const ParamSlice& s : layout.slices()) {
        const std::size_t a = std::max(begin, s.offset + s.null_grad_begin);
        const std::size_t b = std::min(end, s.offset + s.null_grad_end);
        if (s.null_grad_end > s.null_grad_begin && a < b)
            ops::fill(flat(grads + (a - begin), b - a, device), 0.f);
    }
}
}  // namespace

void copy_floats(float* dst, Device dst_on, const float* src, Device src_on, std::size_t n) {
    kernels::copy(flat(dst, n, dst_on), flat(src, n, src_on));
}

ParamState::ParamState(const ModelConfig& model, const ParamLayout& layout, const ParamLayout& full,
                       Comm& dp, Comm& mp, int zero_stage, bool bf16, Device device)
    : model_(model),
      layout_(layout),
      full_layout_(full),
      dp_(dp),
      mp_(mp),
      // ZeRO chunks this rank's local buffer: with TP, each model rank's data group shards its
      // own slice of the model.
      plan_(layout.total(), dp.size(), dp.rank(), zero_stage),
      fsdp_(zero_stage >= 3 && dp.size() > 1),
      streamed_(zero_stage >= 2 && dp.size() > 1),
      device_(device),
      params_(device, fsdp_ ? 0 : plan_.padded),
      grads_(device, streamed_ ? 0 : plan_.padded),
      param_shard_(device, zero_stage >= 3 ? plan_.chunk : 0),
      grad_shard_(device, zero_stage >= 2 ? plan_.chunk : 0) {
    if (streamed_)
        stream_ = std::make_unique<FsdpStream>(dp_, plan_, layout_,
                                               fsdp_ ? param_shard_.data() : params_.data(),
                                               grad_shard_.data(), fsdp_, bf16);
}

float* ParamState::whole_params() {
    if (params_.size() == 0) params_ = kernels::FloatArray(device_, plan_.padded);
    return params_.data();
}

float* ParamState::host_whole() {
    if (device_ == Device::cpu) return whole_params();
    if (host_.size() == 0) host_ = Buffer<float>(plan_.padded);
    return host_.data();
}

void ParamState::host_written() {
    if (device_ != Device::cpu)
        copy_floats(whole_params(), device_, host_.data(), Device::cpu, plan_.padded);
}

const float* ParamState::host_read() {
    if (device_ == Device::cpu) return params_.data();
    copy_floats(host_whole(), Device::cpu, params_.data(), device_, plan_.padded);
    return host_.data();
}

void ParamState::init(std::uint64_t seed) {
    if (fsdp_) {  // straight into the chunk: the model is never whole on a rank
        Buffer<float> staged(device_ == Device::cpu ? 0 : plan_.chunk);  // off the CPU
        float* chunk = device_ == Device::cpu ? param_shard_.data() : staged.data();
        std::memset(chunk, 0, param_shard_.bytes());
        const std::size_t end = std::min(plan_.end(), layout_.total());
        init_params(model_, layout_, mp_.size(), mp_.rank(), chunk, seed, plan_.begin(), end);
        if (chunk != param_shard_.data())
            copy_floats(param_shard_.data(), device_, chunk, Device::cpu, plan_.chunk);
        params_current_ = false;
        return;
    }
    std::memset(host_whole(), 0, plan_.padded * sizeof(float));
    init_params(model_, layout_, mp_.size(), mp_.rank(), host_whole(), seed, 0, layout_.total());
    host_written();
    params_written();
}

float* ParamState::full_params_buffer() {
    if (!tensor_parallel()) return host_whole();
    if (full_.size() == 0) full_ = Buffer<float>(full_layout_.total());
    return full_.data();
}

void ParamState::full_params_written() {
    if (tensor_parallel())
        tp_scatter(full_layout_, layout_, mp_.size(), mp_.rank(), full_.data(), host_whole());
    host_written();
    params_written();
}

const float* ParamState::full_params() {
    sync_params();
    if (!tensor_parallel()) return host_read();
    tp_gather(full_layout_, layout_, mp_, host_read(), full_params_buffer());
    return full_.data();
}

void ParamState::params_written() {
    if (plan_.stage < 3) return;
    copy_floats(param_shard_.data(), device_, params_.data() + plan_.begin(), device_, plan_.chunk);
    // Only the shard counts from now on: every step gathers the model alike.
    params_current_ = false;
    if (fsdp_) params_ = kernels::FloatArray();
}

void ParamState::sync_params() {
    if (plan_.stage < 3 || params_current_) return;
    copy_floats(whole_params() + plan_.begin(), device_, param_shard_.data(), device_, plan_.chunk);
    dp_.all_gather(params_.data(), plan_.chunk);
    params_current_ = true;
}

void ParamState::begin_step() {
    if (fsdp_) {
        params_ = kernels::FloatArray();  // a whole copy gathered for a checkpoint or the weights
        params_current_ = false;
    } else {
        sync_params();
    }
    kernels::FloatArray& g = streamed_ ? grad_shard_ : grads_;
    if (device_ == Device::cpu)
        std::memset(g.data(), 0, g.bytes());
    else
        ops::fill(flat(g.data(), g.size(), device_), 0.f);
}

void ParamState::zero_null_ranges() {
    // Exactly zero by the math (softmax's shift invariance for the key bias); what backward
    // computes is rounding noise that AdamW would turn into lr-sized steps.
    if (streamed_)
        zero_null_on(device_, layout_, grad_shard_.data(), plan_.begin(), plan_.end());
    else
        zero_null_on(device_, layout_, grads_.data(), 0, layout_.total());
}

void ParamState::reduce_gradients() {
    TraceScope trace("gradient reduction");
    if (plan_.stage <= 1)
        bucketed_all_reduce(dp_, grads_.data(), grads_.size());
    else if (dp_.size() == 1)  // (several ranks stream theirs): the chunk is the whole buffer
        copy_floats(grad_shard_.data(), device_, grads_.data(), device_, plan_.chunk);
    else
        dp_.reduce_scatter_sum(grads_.data(), grad_shard_.data(), plan_.chunk);
}

void ParamState::fold_moving_averages() {
    // On the summed statistics where this rank holds them. Stages 0-1 hold every gradient
    // (all-reduced): all of it, so none stays in the gradient norm (stage 1's gather brings the
    // owners' equal values). Stages 2-3: this rank's chunk.
    const std::size_t at = plan_.begin(), end = at + plan_.chunk;
    auto fold = [&](float* params, float* grads, std::size_t begin, std::size_t stop) {
        if (device_ == Device::cpu) return ema_update(layout_, params, grads, begin, stop);
        ema_update_on(device_, layout_, params, grads, begin, stop);
    };
    switch (plan_.stage) {
        case 0:
        case 1:
            fold(params_.data(), grads_.data(), 0, layout_.total());
            return;
        case 2:
            fold(params_.data() + at, grad_shard_.data(), at, end);
            return;
        default:
            fold(param_shard_.data(), grad_shard_.data(), at, end);
    }
}

ParamState::Update ParamState::update_range() {
    const std::size_t at = plan_.begin();
    switch (plan_.stage) {
        case 0:
            return {params_.data(), grads_.data(), 0, plan_.padded};
        case 1:
            return {params_.data() + at, grads_.data() + at, at, plan_.chunk};
        case 2:
            return {params_.data() + at, grad_shard_.data(), at, plan_.chunk};
        default:
            return {param_shard_.data(), grad_shard_.data(), at, plan_.chunk};
    }
}

void ParamState::updated() {
    if (plan_.stage == 0) return;
    if (plan_.stage >= 3) {
        params_current_ = false;
        return;
    }
    if (dp_.size() > 1) dp_.all_gather(params_.data(), plan_.chunk);
}

std::pair<std::size_t, std::size_t> ParamState::chunk_span() const {
    const std::size_t begin = plan_.begin(), total = layout_.total();
    return {begin, begin < total ? std::min(plan_.end(), total) - begin : 0};
}

float* ParamState::chunk_params() {
    // Stage 3 keeps the current parameters only in its shard (FSDP has no whole buffer).
    return plan_.stage >= 3 ? param_shard_.data() : params_.data() + chunk_span().first;
}

void ParamState::chunk_params_written() {
    if (dp_.size() > 1 && plan_.stage < 3) dp_.all_gather(params_.data(), plan_.chunk);
    if (plan_.stage >= 3) params_current_ = false;  // sync_params() gathers from the chunks
}

const float* ParamState::chunk_on_host(const float* src, std::size_t count, int slot) {
    if (device_ == Device::cpu) return src;
    if (chunk_host_.size() == 0) chunk_host_ = Buffer<float>(3 * plan_.chunk);
    float* dst = chunk_host_.data() + static_cast<std::size_t>(slot) * plan_.chunk;
    copy_floats(dst, Device::cpu, src, device_, count);
    return dst;
}

HeldSpan ParamState::held_params() {
    if (plan_.stage >= 3) {
        const auto [begin, count] = chunk_span();
        return {chunk_on_host(param_shard_.data(), count, 0), begin, begin + count};
    }
    return {host_read(), 0, layout_.total()};
}

HeldSpan ParamState::held_grads() {
    if (plan_.stage >= 2) {
        const auto [begin, count] = chunk_span();
        return {chunk_on_host(grad_shard_.data(), count, 1), begin, begin + count};
    }
    if (device_ == Device::cpu) return {grads_.data(), 0, layout_.total()};
    if (held_host_.size() == 0) held_host_ = Buffer<float>(grads_.size());
    copy_floats(held_host_.data(), Device::cpu, grads_.data(), device_, grads_.size());
    return {held_host_.data(), 0, layout_.total()};
}

std::size_t ParamState::param_bytes() const {
    return plan_.stage >= 3 ? param_shard_.bytes() : params_.bytes();
}
std::size_t ParamState::grad_bytes() const {
    return plan_.stage >= 2 ? grad_shard_.bytes() : grads_.bytes();
}
std::size_t ParamState::working_bytes() const {
    if (streamed_) return stream_->buffer_bytes();
    return (plan_.stage >= 2 ? grads_.bytes() : 0) + (plan_.stage >= 3 ? params_.bytes() : 0);
}

}  // namespace meshlm

#include "meshlm/train/learner.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "meshlm/core/error.h"
#include "meshlm/core/trace.h"
#include "meshlm/kernels/device.h"
#include "meshlm/kernels/ops/clip.h"
#include "meshlm/kernels/ops/elementwise.h"
#include "meshlm/model/transformer_layout.h"
#include "meshlm/optim/mup_rule.h"
#include "meshlm/optim/schedule.h"
#include "meshlm/parallel/bucketed.h"

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
}  // namespace

std::vector<ParamGroup> param_groups(const ParamLayout& layout, const OptimConfig& optim,
                                     const ModelConfig& model) {
    const std::string& mask = optim.decay_mask;
    if (mask != "matrices" && mask != "all" && mask != "none")
        MESHLM_INVALID("optim.decay_mask must be matrices, all or none (got '", mask, "')");
    std::vector<ParamGroup> groups;
    for (const ParamSlice& s : layout.slices()) {
        const bool decay = mask == "all" || (mask == "matrices" && s.decay);
        // Fan-in of the whole tensor (a tensor-parallel shard keeps its tensor's rule).
        const std::int64_t fan_in = s.full_shape.ndim == 2 ? s.full_shape.dims[1] : 1;
        const LrScale k = mup_lr_scale(optim, s.mup_role, fan_in, model.d_model, model.mup_d_base);
        // Merge neighbours with the same facts: fewer, longer optimizer sweeps.
        if (!groups.empty()) {
            ParamGroup& b = groups.back();
            if (b.decay == decay && b.lr_scale == k.lr && b.eps_scale == k.eps &&
                b.offset + b.numel <= s.offset) {
                b.numel = s.offset + s.numel - b.offset;
                continue;
            }
        }
        groups.push_back({s.offset, s.numel, decay, k.lr, k.eps});
    }
    return groups;
}

std::vector<ParamGroup> shard_groups(const std::vector<ParamGroup>& groups, std::size_t begin,
                                     std::size_t end) {
    std::vector<ParamGroup> out;
    for (const ParamGroup& g : groups) {
        const std::size_t lo = std::max(g.offset, begin), hi = std::min(g.offset + g.numel, end);
        if (lo < hi) out.push_back({lo - begin, hi - lo, g.decay, g.lr_scale, g.eps_scale});
    }
    return out;
}

Learner::Learner(const ModelConfig& model, const OptimConfig& optim, int batch, int seq,
                 long total_steps, Comm* dp, int zero_stage, Comm* mp, Recompute recompute,
                 Precision precision, Device device)
    : model_cfg_(model),
      optim_cfg_(optim),
      batch_(batch),
      seq_(seq),
      total_steps_(total_steps),
      dp_(dp ? *dp : local_),
      mp_(mp ? *mp : local_),
      mp_group_(mp_.size() > 1 ? std::make_unique<CommModelGroup>(mp_) : nullptr),
      model_(std::make_unique<Transformer>(model, batch, seq, mp_group_.get(), recompute, precision,
                                           device)),
      layout_(model_->layout()),
      full_layout_(transformer_layout(model)),
      // ZeRO chunks this rank's local buffer: with TP, each model rank's data group shards its
      // own slice of the model.
      plan_(layout_.total(), dp_.size(), dp_.rank(), zero_stage),
      fsdp_(zero_stage >= 3 && dp_.size() > 1),
      streamed_(zero_stage >= 2 && dp_.size() > 1),
      device_(device),
      params_(device, fsdp_ ? 0 : plan_.padded),
      grads_(device, streamed_ ? 0 : plan_.padded),
      param_shard_(device, zero_stage >= 3 ? plan_.chunk : 0),
      grad_shard_(device, zero_stage >= 2 ? plan_.chunk : 0),
      // Decay groups from the local layout: it keeps the whole layout's tensors and facts.
      optim_(
          optim,
          zero_stage >= 1
              ? shard_groups(param_groups(layout_, optim, model), plan_.begin(), plan_.end())
              : param_groups(layout_, optim, model),
          zero_stage >= 1 ? plan_.chunk : plan_.padded,
          optim.name == "adafactor"
              ? adafactor_plan(layout_, mp_.size(), mp_.rank(), zero_stage >= 1 ? plan_.begin() : 0,
                               zero_stage >= 1 ? plan_.end() : plan_.padded, optim)
              : AdafactorPlan{},
          false, device),
      reducer_(dp_, kGradBucketFloats) {
    if (const std::string gap =
            device_gap(model, optim, device, dp_.size(), mp_.size(), zero_stage);
        !gap.empty())
        MESHLM_INVALID(gap);
    // The collectives of several ranks move this run's buffers: they must be on its device.
    for (Comm* c : {&dp_, &mp_})
        if (c->size() > 1 && c->device() != device)
            MESHLM_INVALID("training on ", kernels::device_name(device), " over ", c->size(),
                           " ranks needs a ", kernels::device_name(device), " communicator, got ",
                           c->backend(), " (parallel/device_comm.h: make_device_world)");
    // Adafactor's per-tensor sums (host doubles): over the data ranks when ZeRO chunks the
    // tensors, over the model ranks when tensor parallelism shards them (one all-reduce each).
    const bool chunked = zero_stage >= 1 && dp_.size() > 1;
    if (chunked || tensor_parallel())
        optim_.set_tensor_sum([this, chunked](double* sums, std::size_t n) {
            if (chunked) dp_.host().all_reduce_sum(sums, n);
            if (tensor_parallel()) mp_.host().all_reduce_sum(sums, n);
        });
    block_ranges_.assign(model.n_layer, {layout_.total(), 0});
    for (const ParamSlice& s : layout_.slices())
        if (s.layer >= 0) {
            auto& [lo, hi] = block_ranges_[s.layer];
            lo = std::min(lo, s.offset);
            hi = std::max(hi, s.offset + s.numel);
        }
    if (fsdp_) {
        masked_row_.assign(2 * static_cast<std::size_t>(seq), 0);
        std::fill_n(masked_row_.begin() + seq, seq, -1);
    }
    if (streamed_) {
        stream_ = std::make_unique<FsdpStream>(
            dp_, plan_, layout_, fsdp_ ? param_shard_.data() : params_.data(), grad_shard_.data(),
            fsdp_, precision == Precision::bf16);
        model_->set_param_stream(stream_.get());
    }
}

float Learner::forward(const float* params, const std::int32_t* tokens, const std::int32_t* targets,
                       int B, int T, float grad_scale) {
    TraceScope trace("forward");
    return model_->forward(params, tokens, targets, B, T, grad_scale);
}

void Learner::backward(const float* params, float* grads) {
    TraceScope trace("backward");
    model_->backward(params, grads);
}

std::string Learner::device_gap(const ModelConfig& model, const OptimConfig& optim, Device device,
                                int data_ranks, int model_ranks, int zero_stage) {
    if (device == Device::cpu) return "";
    const std::string on = detail::concat("training on ", kernels::device_name(device), ": ");
    if (const std::string gap = model_device_gap(model, device); !gap.empty()) return on + gap;
    (void)optim, (void)data_ranks, (void)model_ranks, (void)zero_stage;  // all run there
    return "";
}

float* Learner::whole_params() {
    if (params_.size() == 0) params_ = kernels::FloatArray(device_, plan_.padded);
    return params_.data();
}

void Learner::copy_floats(float* dst, Device dst_on, const float* src, Device src_on,
                          std::size_t n) {
    kernels::copy(flat(dst, n, dst_on), flat(src, n, src_on));
}

float* Learner::host_whole() {
    if (device_ == Device::cpu) return whole_params();
    if (host_.size() == 0) host_ = Buffer<float>(plan_.padded);
    return host_.data();
}

void Learner::host_written() {
    if (device_ != Device::cpu)
        copy_floats(whole_params(), device_, host_.data(), Device::cpu, plan_.padded);
}

const float* Learner::host_read() {
    if (device_ == Device::cpu) return params_.data();
    copy_floats(host_whole(), Device::cpu, params_.data(), device_, plan_.padded);
    return host_.data();
}

void Learner::init_params(std::uint64_t seed) {
    if (fsdp_) {  // straight into the chunk: the model is never whole on a rank
        Buffer<float> staged(device_ == Device::cpu ? 0 : plan_.chunk);  // off the CPU
        float* chunk = device_ == Device::cpu ? param_shard_.data() : staged.data();
        std::memset(chunk, 0, param_shard_.bytes());
        const std::size_t end = std::min(plan_.end(), layout_.total());
        init_params_range(chunk, seed, plan_.begin(), end);
        if (chunk != param_shard_.data())
            copy_floats(param_shard_.data(), device_, chunk, Device::cpu, plan_.chunk);
        params_current_ = false;
        return;
    }
    std::memset(host_whole(), 0, plan_.padded * sizeof(float));
    init_params_range(host_whole(), seed, 0, layout_.total());
    host_written();
    params_written();
}

void Learner::init_params_range(float* params, std::uint64_t seed, std::size_t begin,
                                std::size_t end) {
    meshlm::init_params(model_cfg_, layout_, mp_.size(), mp_.rank(), params, seed, begin, end);
}

float* Learner::full_params_buffer() {
    if (!tensor_parallel()) return host_whole();
    if (full_.size() == 0) full_ = Buffer<float>(full_layout_.total());
    return full_.data();
}

void Learner::full_params_written() {
    if (tensor_parallel())
        tp_scatter(full_layout_, layout_, mp_.size(), mp_.rank(), full_.data(), host_whole());
    host_written();
    params_written();
}

const float* Learner::full_params() {
    sync_params();
    if (!tensor_parallel()) return host_read();
    tp_gather(full_layout_, layout_, mp_, host_read(), full_params_buffer());
    return full_.data();
}

void Learner::params_written() {
    if (plan_.stage < 3) return;
    copy_floats(param_shard_.data(), device_, params_.data() + plan_.begin(), device_, plan_.chunk);
    // Only the shard counts from now on: every step gathers the model alike.
    params_current_ = false;
    if (fsdp_) params_ = kernels::FloatArray();
}

void Learner::sync_params() {
    if (plan_.stage < 3 || params_current_) return;
    copy_floats(whole_params() + plan_.begin(), device_, param_shard_.data(), device_, plan_.chunk);
    dp_.all_gather(params_.data(), plan_.chunk);
    params_current_ = true;
}

std::unique_ptr<Optimizer> Learner::make_full_optimizer() const {
    const std::size_t n = tensor_parallel() ? full_layout_.total() : plan_.padded;
    // Flat: Adafactor's second moments as the checkpoints' slot.
    return std::make_unique<Optimizer>(
        optim_cfg_, param_groups(full_layout_, optim_cfg_, model_cfg_), n,
        optim_cfg_.name == "adafactor" ? adafactor_plan(full_layout_, 1, 0, 0, n, optim_cfg_)
                                       : AdafactorPlan{},
        true);
}

std::unique_ptr<Optimizer> Learner::gather_optimizer() {
    const bool tp = tensor_parallel();
    if (plan_.stage == 0 && !tp && !optim_.packed_v() && device_ == Device::cpu) return nullptr;
    auto full = make_full_optimizer();
    // First this model rank's whole local moments (every data rank's chunk), then with TP
    // every model rank's shard placed into the full layout.
    const std::size_t at = plan_.stage == 0 ? 0 : plan_.begin();
    const std::size_t n = plan_.stage == 0 ? plan_.padded : plan_.chunk;
    Buffer<float> unpacked;  // Adafactor's packed second moments as the flat slot of the range
    const float* v = optim_.v();
    if (optim_.packed_v()) {
        unpacked = Buffer<float>(n);
        optim_.export_v(unpacked.data());
        v = unpacked.data();
    }
    for (auto [mine, whole] :
         {std::pair<const float*, float*>{optim_.m(), full->m()}, {v, full->v()}}) {
        if (!mine) continue;  // Lion keeps no second moment, Adafactor no first
        Buffer<float> local;
        float* to = whole;
        if (tp) local = Buffer<float>(plan_.padded), to = local.data();
        // Adafactor's packed moments were unpacked to the host already.
        copy_floats(to + at, Device::cpu, mine, mine == unpacked.data() ? Device::cpu : device_, n);
        if (plan_.stage >= 1) dp_.host().all_gather(to, plan_.chunk);
        if (tp) tp_gather(full_layout_, layout_, mp_, to, whole);
    }
    // Whole on every rank already (Adafactor's factored statistics).
    if (optim_.stat_floats())
        copy_floats(full->stats(), Device::cpu, optim_.stats(), device_, optim_.stat_floats());
    full->set_steps_taken(optim_.steps_taken());
    return full;
}

void Learner::load_optimizer(Optimizer& full) {
    const std::size_t at = plan_.stage == 0 ? 0 : plan_.begin();
    const std::size_t n = plan_.stage == 0 ? plan_.padded : plan_.chunk;
    if (&full != &optim_) {
        Buffer<float> unpacked(optim_.packed_v() ? n : 0);  // Adafactor's, see gather_optimizer
        float* v = optim_.packed_v() ? unpacked.data() : optim_.v();
        for (auto [mine, whole] : {std::pair{optim_.m(), full.m()}, {v, full.v()}}) {
            if (!mine) continue;
            const float* from = whole;
            Buffer<float> local;
            if (tensor_parallel()) {  // this model rank's shard of the full layout first
                local = Buffer<float>(plan_.padded);
                tp_scatter(full_layout_, layout_, mp_.size(), mp_.rank(), whole, local.data());
                from = local.data();
            }
            copy_floats(mine, mine == unpacked.data() ? Device::cpu : device_, from + at,
                        Device::cpu, n);
        }
        if (optim_.packed_v()) optim_.import_v(unpacked.data());
        if (optim_.stat_floats())
            copy_floats(optim_.stats(), device_, full.stats(), Device::cpu, optim_.stat_floats());
    }
    optim_.set_steps_taken(full.steps_taken());
}

std::pair<std::size_t, std::size_t> Learner::chunk_span() const {
    const std::size_t begin = plan_.begin(), total = layout_.total();
    return {begin, begin < total ? std::min(plan_.end(), total) - begin : 0};
}

const float* Learner::chunk_on_host(const float* src, std::size_t count, int slot) {
    if (device_ == Device::cpu) return src;
    if (chunk_host_.size() == 0) chunk_host_ = Buffer<float>(3 * plan_.chunk);
    float* dst = chunk_host_.data() + static_cast<std::size_t>(slot) * plan_.chunk;
    copy_floats(dst, Device::cpu, src, device_, count);
    return dst;
}

Learner::LocalChunk Learner::local_chunk() {
    const auto [begin, count] = chunk_span();
    // Stage 3 keeps the current parameters only in its shard; stage 0's moments are whole.
    const float* p = plan_.stage >= 3 ? param_shard_.data() : params_.data() + begin;
    const std::size_t at = plan_.stage == 0 ? begin : 0;
    const float* v = optim_.v();
    if (optim_.packed_v()) {  // Adafactor's packed second moments, as the flat slot
        v_export_ = Buffer<float>(plan_.stage == 0 ? plan_.padded : plan_.chunk);
        optim_.export_v(v_export_.data());
        v = v_export_.data();
    }
    // Off the CPU a host copy of each (Adafactor, whose v is exported above, is CPU-only).
    return {chunk_on_host(p, count, 0),
            optim_.m() ? chunk_on_host(optim_.m() + at, count, 1) : nullptr,
            v ? chunk_on_host(v + at, count, 2) : nullptr,
            begin,
            count,
            optim_.stats()};
}

void Learner::load_local_chunk(const float* params, const float* m, const float* v,
                               const float* stats, long step) {
    const auto [begin, count] = chunk_span();
    // Stage 3 keeps only its chunk (FSDP has no whole buffer to go through).
    float* p = plan_.stage >= 3 ? param_shard_.data() : params_.data() + begin;
    const std::size_t at = plan_.stage == 0 ? begin : 0;
    const std::size_t pad = plan_.chunk - count;
    // The host chunk onto `on`, its padding zeroed.
    auto put = [&](float* dst, Device on, const float* src) {
        copy_floats(dst, on, src, Device::cpu, count);
        if (pad > 0) ops::fill(flat(dst + count, pad, on), 0.f);
    };
    put(p, device_, params);
    MESHLM_CHECK(!optim_.m() || m, "the checkpoint has no first moments for ", optim_cfg_.name);
    const bool packed = optim_.packed_v();
    MESHLM_CHECK(!(optim_.v() || packed) || v, "the checkpoint has no second moments for ",
                 optim_cfg_.name);
    MESHLM_CHECK(!optim_.stats() || stats, "the checkpoint has no factored statistics for ",
                 optim_cfg_.name);
    std::copy_n(stats, optim_.stat_floats(), optim_.stats());
    // Adafactor's packed second moments go through the flat slot of the range.
    Buffer<float> unpacked(packed ? (plan_.stage == 0 ? plan_.padded : plan_.chunk) : 0);
    for (auto [mine, from] :
         {std::pair{optim_.m(), m}, {packed ? unpacked.data() : optim_.v(), v}}) {
        if (!mine) continue;  // Lion keeps no second moment, Adafactor no first
        put(mine + at, packed && mine == unpacked.data() ? Device::cpu : device_, from);
        if (dp_.size() > 1 && plan_.stage == 0) dp_.all_gather(mine, plan_.chunk);
    }
    if (packed) optim_.import_v(unpacked.data());
    if (dp_.size() > 1 && plan_.stage < 3) dp_.all_gather(params_.data(), plan_.chunk);
    if (plan_.stage >= 3) params_current_ = false;  // sync_params() gathers from the chunks
    optim_.set_steps_taken(step);
}

std::size_t Learner::param_bytes() const {
    return plan_.stage >= 3 ? param_shard_.bytes() : params_.bytes();
}
std::size_t Learner::grad_bytes() const {
    return plan_.stage >= 2 ? grad_shard_.bytes() : grads_.bytes();
}
std::size_t Learner::working_bytes() const {
    if (streamed_) return stream_->buffer_bytes();
    return (plan_.stage >= 2 ? grads_.bytes() : 0) + (plan_.stage >= 3 ? params_.bytes() : 0);
}

StepStats Learner::train_step(const std::int32_t* tokens, const std::int32_t* targets, int micro,
                              int B, int T) {
    v_export_ = Buffer<float>();  // a checkpoint's copy of Adafactor's second moments
    if (fsdp_) {
        params_ =
            kernels::FloatArray();  // a whole copy gathered for a checkpoint or the final weights
        params_current_ = false;
    } else {
        sync_params();
    }
    kernels::FloatArray& g = streamed_ ? grad_shard_ : grads_;
    if (device_ == Device::cpu)
        std::memset(g.data(), 0, g.bytes());
    else
        ops::fill(flat(g.data(), g.size(), device_), 0.f);
    if (streamed_) stream_->begin(true);
    const bool distributed = dp_.size() > 1;
    const std::size_t per = static_cast<std::size_t>(B) * T;
    // The gradient of the mean over all scored targets of the step: every micro-batch's
    // per-token gradients are scaled by 1 / (scored targets of the whole step, all ranks).
    std::int64_t scored = 0;
    for (std::size_t i = 0; i < per * micro; ++i) scored += targets[i] >= 0;
    if (distributed) dp_.host().all_reduce_sum(&scored, 1);
    const float grad_scale = scored ? 1.f / static_cast<float>(scored) : 0.f;
    double loss = 0;
    const bool overlap = distributed && plan_.stage <= 1;
    if (overlap) reducer_.begin(grads_.data(), grads_.size());
    if (diag_on_)
        diag_.start_step(targets, per, micro, scored, distributed, overlap, tensor_parallel());
    for (int m = 0; m < micro; ++m) {
        const std::int32_t* tg = targets + m * per;
        std::size_t n = 0;
        for (std::size_t i = 0; i < per; ++i) n += tg[i] >= 0;
        // On several ranks every micro-batch runs, scored or not: the streamed gathers and
        // reductions (stages 2-3) and the per-block all-reduces of the backward hook (stages 0-1)
        // are collectives whose sequence must be the same on every rank. (`scored` is global:
        // a step with nothing to score is skipped by every rank alike.)
        if (n == 0 && (!distributed || scored == 0)) continue;
        model_->set_dropout_key(drop_seed_, optim_.steps_taken(),
                                drop_row0_ + static_cast<std::int64_t>(m) * B * dp_.size());
        if (carry_on_) {
            const std::size_t per_micro = static_cast<std::size_t>(model_cfg_.n_layer) * B;
            if (carry_.size() < per_micro * micro) carry_.resize(per_micro * micro);
            model_->set_vq_states(carry_.data() + per_micro * m, B);
        }
        loss +=
            static_cast<double>(forward(params_.data(), tokens + m * per, tg, B, T, grad_scale)) *
            static_cast<double>(n);
        // On the last micro-batch each block's gradients are final when its backward ends.
        if (overlap && m == micro - 1)
            model_->set_block_backward_hook([this](int layer) {
                if (diag_on_)
                    diag_.rank_range(layout_, grads_.data(), block_ranges_[layer].first,
                                     block_ranges_[layer].second, device_);
                reducer_.ready(block_ranges_[layer].first, block_ranges_[layer].second);
            });
        backward(params_.data(), grads_.data());
        if (diag_on_) diag_.micro_done(m, layout_, grads_.data(), device_);
        if (carry_on_) model_->set_vq_states(nullptr, 0);
        if (overlap) model_->set_block_backward_hook({});
    }
    if (overlap && diag_on_) diag_.rank_rest(layout_, grads_.data(), block_ranges_, device_);
    if (overlap) reducer_.finish();
    if (streamed_) stream_->end();
    // Exactly zero by the math (softmax's shift invariance for the key bias); what backward
    // computes is rounding noise that AdamW would turn into lr-sized steps.
    if (streamed_)
        zero_null(grad_shard_.data(), plan_.begin(), plan_.end());
    else
        zero_null(grads_.data(), 0, layout().total());
    if (distributed) dp_.host().all_reduce_sum(&loss, 1);
    StepStats st;
    st.loss = scored ? static_cast<float>(loss / static_cast<double>(scored)) : 0.f;
    if (!overlap && !streamed_) reduce_gradients();
    fold_moving_averages();
    if (inject_nan_step_ > 0 && optim_.steps_taken() + 1 == inject_nan_step_) {
        inject_nan_step_ = 0;
        const float nan = std::numeric_limits<float>::quiet_NaN();
        copy_floats(plan_.stage >= 2 ? grad_shard_.data() : grads_.data(), device_, &nan,
                    Device::cpu, 1);
    }
    st.grad_norm = clip_gradients();
    if (model_cfg_.vq()) st.vq = model_->vq_stats();
    st.lr = lr_at(optim_cfg_, optim_.steps_taken(), total_steps_);
    if (step_check_ && !step_check_(st)) {
        st.applied = false;
        if (coord_on_) coord_on_ = false, model_->set_coord_stats(nullptr);
        if (diag_on_) stop_diagnostics();
        return st;
    }
    update(st.lr);
    return st;
}

void Learner::zero_null(float* grads, std::size_t begin, std::size_t end) {
    if (device_ == Device::cpu) {
        zero_null_grads(layout(), grads, begin, end);
        return;
    }
    for (const ParamSlice& s : layout().slices()) {
        const std::size_t a = std::max(begin, s.offset + s.null_grad_begin);
        const std::size_t b = std::min(end, s.offset + s.null_grad_end);
        if (s.null_grad_end > s.null_grad_begin && a < b)
            ops::fill(flat(grads + (a - begin), b - a, device_), 0.f);
    }
}

Learner::Held Learner::held_params() {
    if (plan_.stage >= 3) {
        const auto [begin, count] = chunk_span();
        return {chunk_on_host(param_shard_.data(), count, 0), begin, begin + count};
    }
    return {host_read(), 0, layout_.total()};
}

Learner::Held Learner::held_grads() {
    if (plan_.stage >= 2) {
        const auto [begin, count] = chunk_span();
        return {chunk_on_host(grad_shard_.data(), count, 1), begin, begin + count};
    }
    if (device_ == Device::cpu) return {grads_.data(), 0, layout_.total()};
    if (held_host_.size() == 0) held_host_ = Buffer<float>(grads_.size());
    copy_floats(held_host_.data(), Device::cpu, grads_.data(), device_, grads_.size());
    return {held_host_.data(), 0, layout_.total()};
}

void Learner::fold_moving_averages() {
    // On the summed statistics where this rank holds them. Stages 0-1 hold every gradient
    // (all-reduced): all of it, so none stays in the gradient norm (stage 1's gather brings the
    // owners' equal values). Stages 2-3: this rank's chunk.
    const std::size_t at = plan_.begin(), end = at + plan_.chunk;
    auto fold = [&](float* params, float* grads, std::size_t begin, std::size_t stop) {
        if (device_ == Device::cpu) return ema_update(layout(), params, grads, begin, stop);
        ema_update_on(device_, layout(), params, grads, begin, stop);
    };
    switch (plan_.stage) {
        case 0:
        case 1:
            fold(params_.data(), grads_.data(), 0, layout().total());
            return;
        case 2:
            fold(params_.data() + at, grad_shard_.data(), at, end);
            return;
        default:
            fold(param_shard_.data(), grad_shard_.data(), at, end);
    }
}

void Learner::reduce_gradients() {
    TraceScope trace("gradient reduction");
    if (plan_.stage <= 1)
        bucketed_all_reduce(dp_, grads_.data(), grads_.size());
    else if (dp_.size() == 1)  // (several ranks stream theirs): the chunk is the whole buffer
        copy_floats(grad_shard_.data(), device_, grads_.data(), device_, plan_.chunk);
    else
        dp_.reduce_scatter_sum(grads_.data(), grad_shard_.data(), plan_.chunk);
}

float Learner::clip_gradients() {
    TraceScope trace("gradient norm");
    const bool tp = tensor_parallel();
    const bool fold = optim_.folds_grad_scale();
    grad_scale_ = 1.f;
    if (!tp && plan_.stage <= 1)
        return meshlm::clip_gradients(optim_cfg_, grads_.data(), grads_.size(),
                                      fold ? &grad_scale_ : nullptr, device_);
    // The global norm from what this rank holds: its chunk (stages 2-3, summed over the data
    // ranks) of its local buffer. With TP, sharded slices are summed over the model ranks and
    // replicated ones, the same on every model rank, counted once. Padding is zero.
    const bool chunked = plan_.stage >= 2;
    float* g = chunked ? grad_shard_.data() : grads_.data();
    const std::size_t lo = chunked ? plan_.begin() : 0, hi = lo + (chunked ? plan_.chunk : 0);
    double sums[2] = {0, 0};  // sharded, replicated
    if (!tp) {
        // One sum over the chunk: bitwise what stage 0 computes on one rank, and a single
        // double on the wire.
        sums[0] = ops::sum_squares(flat(g, plan_.chunk, device_));
        if (dp_.size() > 1) dp_.host().all_reduce_sum(sums, 1);
    } else if (!chunked) {
        sums[0] = tp_sum_squares(layout_, g, mp_, device_);
    } else {
        for (const ParamSlice& s : layout_.slices()) {
            const std::size_t a = std::max(s.offset, lo), b = std::min(s.offset + s.numel, hi);
            if (a < b)
                sums[s.split == TpSplit::replicated] +=
                    ops::sum_squares(flat(g + (a - lo), b - a, device_));
        }
        if (dp_.size() > 1) dp_.host().all_reduce_sum(sums, 2);
        mp_.host().all_reduce_sum(sums, 1);
    }
    const float norm = static_cast<float>(std::sqrt(sums[0] + sums[1]));
    grad_scale_ = apply_clip(optim_cfg_, g, chunked ? grad_shard_.size() : grads_.size(), norm,
                             fold, device_);
    return norm;
}

void Learner::add_update_sums(const float* before, const float* after, std::size_t lo,
                              std::size_t hi, float lr) {
    const auto& slices = layout_.slices();
    for (std::size_t i = 0; i < slices.size(); ++i) {
        const ParamSlice& s = slices[i];
        const std::size_t a = std::max(s.offset, lo), b = std::min(s.offset + s.numel, hi);
        if (a >= b) continue;
        const std::int64_t fan_in = s.full_shape.ndim == 2 ? s.full_shape.dims[1] : 1;
        const double rate =
            static_cast<double>(lr) *
            mup_lr_scale(optim_cfg_, s.mup_role, fan_in, model_cfg_.d_model, model_cfg_.mup_d_base)
                .lr;
        double sum = 0;
        for (std::size_t k = a; k < b; ++k) sum += std::fabs(after[k - lo] - before[k - lo]);
        update_sums_[i] += rate > 0 ? sum / rate : 0.0;
        update_sums_[slices.size() + i] += static_cast<double>(b - a);
    }
}

void Learner::update(float lr) {
    TraceScope trace("optimizer");
    if (!coord_on_ && !diag_on_) return update_steps(lr);
    // What this rank's optimizer step updates: the whole buffer (stage 0), its chunk; compared
    // on the host (a copy off the CPU).
    const std::size_t lo = plan_.stage == 0 ? 0 : plan_.begin();
    const std::size_t n = plan_.stage == 0 ? plan_.padded : plan_.chunk;
    float* p = plan_.stage >= 3 ? param_shard_.data() : params_.data() + lo;
    std::vector<float> before(n), host_after;
    copy_floats(before.data(), Device::cpu, p, device_, n);
    update_steps(lr);
    const float* after = p;
    if (device_ != Device::cpu) {
        host_after.resize(n);
        copy_floats(host_after.data(), Device::cpu, p, device_, n);
        after = host_after.data();
    }
    if (coord_on_) {
        coord_on_ = false;
        model_->set_coord_stats(nullptr);
        add_update_sums(before.data(), after, lo, lo + n, lr);
    }
    if (diag_on_) {
        diag_.add_update(layout_, before.data(), after, lo, lo + n);
        stop_diagnostics();
    }
}

void Learner::update_steps(float lr) {
    const std::size_t at = plan_.begin();
    switch (plan_.stage) {
        case 0:
            optim_.step(params_.data(), grads_.data(), lr, grad_scale_);
            return;
        case 1:
            optim_.step(params_.data() + at, grads_.data() + at, lr, grad_scale_);
            break;
        case 2:
            optim_.step(params_.data() + at, grad_shard_.data(), lr, grad_scale_);
            break;
        default:
            optim_.step(param_shard_.data(), grad_shard_.data(), lr, grad_scale_);
            params_current_ = false;
            return;
    }
    if (dp_.size() > 1) dp_.all_gather(params_.data(), plan_.chunk);
}

float Learner::eval_forward(const std::int32_t* tokens, const std::int32_t* targets, int B, int T) {
    if (fsdp_) {
        stream_->begin(false);
        const float loss = forward(nullptr, tokens, targets, B, T, 0.f);
        stream_->end();
        return loss;
    }
    sync_params();
    return forward(params_.data(), tokens, targets, B, T, 0.f);
}

float Learner::eval_loss(const std::int32_t* tokens, const std::int32_t* targets) {
    return eval_forward(tokens, targets, batch_, seq_);
}

const float* Learner::eval_losses(const std::int32_t* tokens, const std::int32_t* targets, int B,
                                  int T) {
    if (T > seq_ && model_cfg_.vq()) {  // rows of several model.vq.update_len chunks
        if (!eval_chunks_)
            eval_chunks_ = std::make_unique<ChunkedLosses>(
                *model_, seq_,
                [this](const std::int32_t* tk, const std::int32_t* tg, int b, int u) {
                    return eval_losses(tk, tg, b, u);
                });
        return (*eval_chunks_)(tokens, targets, B, T);
    }
    if (B == 0) {
        if (fsdp_) eval_forward(masked_row_.data(), masked_row_.data() + seq_, 1, T);
        return nullptr;
    }
    eval_forward(tokens, targets, B, T);
    return model_->losses();
}

}  // namespace meshlm

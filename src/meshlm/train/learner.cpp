#include "meshlm/train/learner.h"

#include <limits>

#include "meshlm/core/error.h"
#include "meshlm/core/trace.h"
#include "meshlm/kernels/device.h"
#include "meshlm/model/transformer_layout.h"
#include "meshlm/optim/schedule.h"

namespace meshlm {

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
      state_(model_cfg_, layout_, full_layout_, dp_, mp_, zero_stage, precision == Precision::bf16,
             device),
      optim_(model_cfg_, optim_cfg_, layout_, full_layout_, state_, dp_, mp_),
      driver_(*model_, state_, dp_, model_cfg_, layout_, batch, seq) {
    if (const std::string gap = device_gap(model, device); !gap.empty()) MESHLM_INVALID(gap);
    // The collectives of several ranks move this run's buffers: they must be on its device.
    for (Comm* c : {&dp_, &mp_})
        if (c->size() > 1 && c->device() != device)
            MESHLM_INVALID("training on ", kernels::device_name(device), " over ", c->size(),
                           " ranks needs a ", kernels::device_name(device), " communicator, got ",
                           c->backend(), " (parallel/device_comm.h: make_device_world)");
    if (state_.stream()) model_->set_param_stream(state_.stream());
}

std::string Learner::device_gap(const ModelConfig& model, Device device, int coord_interval) {
    if (device == Device::cpu) return "";
    const std::string on = detail::concat("training on ", kernels::device_name(device), ": ");
    if (const std::string gap = model_device_gap(model, device); !gap.empty()) return on + gap;
    if (coord_interval > 0)
        return on + "train.coord_interval: the coordinate check reads its updates on the host";
    return "";
}

StepStats Learner::train_step(const std::int32_t* tokens, const std::int32_t* targets, int micro,
                              int B, int T) {
    optim_.begin_step();
    state_.begin_step();
    StepStats st;
    st.loss = driver_.accumulate(tokens, targets, micro, B, T, step());
    state_.fold_moving_averages();
    if (inject_nan_step_ > 0 && step() + 1 == inject_nan_step_) {
        inject_nan_step_ = 0;
        const float nan = std::numeric_limits<float>::quiet_NaN();
        copy_floats(state_.reduced_grads(), device(), &nan, Device::cpu, 1);
    }
    st.grad_norm = optim_.clip();
    if (model_cfg_.vq()) st.vq = model_->vq_stats();
    st.lr = lr_at(optim_cfg_, step(), total_steps_);
    if (step_check_ && !step_check_(st)) {
        st.applied = false;
        if (coord_.on()) coord_.stop(*model_);
        if (diag_on_) stop_diagnostics();
        return st;
    }
    update(st.lr);
    return st;
}

void Learner::update(float lr) {
    TraceScope trace("optimizer");
    const ParamState::Update u = state_.update_range();
    if (!coord_.on() && !diag_on_) {
        optim_.step(u, lr);
        state_.updated();
        return;
    }
    // What this rank's optimizer step updates: the whole buffer (stage 0), its chunk; compared
    // on the host (a copy off the CPU).
    std::vector<float> before(u.count), host_after;
    copy_floats(before.data(), Device::cpu, u.params, device(), u.count);
    optim_.step(u, lr);
    state_.updated();
    const float* after = u.params;
    if (device() != Device::cpu) {
        host_after.resize(u.count);
        copy_floats(host_after.data(), Device::cpu, u.params, device(), u.count);
        after = host_after.data();
    }
    const std::size_t lo = u.begin, hi = u.begin + u.count;
    if (coord_.on()) {
        coord_.stop(*model_);
        coord_.add_update_sums(layout_, optim_cfg_, model_cfg_, before.data(), after, lo, hi, lr);
    }
    if (diag_on_) {
        diag_.add_update(layout_, before.data(), after, lo, hi);
        stop_diagnostics();
    }
}

}  // namespace meshlm

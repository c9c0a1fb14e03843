// The training step: parameters, gradients and optimizer state as flat buffers with the model's
// layout, and one optimizer step over gradient-accumulated micro-batches — on one process, or
// data-parallel over a communicator with ZeRO stage 0-3 (parallel/zero_plan.h says what each
// rank holds). Everything is allocated in the constructor; a single-process train_step()
// allocates nothing.
//
// Data parallel: every rank runs the step on its own rows of the global batch; the loss is the
// mean over every scored target of the global batch (the scored count is all-reduced first, so
// each rank scales its gradients by 1 / global count) and the result equals the single-process
// step up to float summation order.
//   stage 0: gradients all-reduced in buckets; every rank runs the whole AdamW update.
//   stage 1: gradients all-reduced; each rank updates its chunk of the flat buffer with its
//            shard of the moments, then the parameters are all-gathered.
//   stage 2: gradients reduce-scattered into the rank's chunk block by block as the backward
//            finishes each (parallel/fsdp.h, parameters whole); update as stage 1.
//   stage 3: FSDP (parallel/fsdp.h): the rank keeps only its chunks of the parameters and
//            gradients; the model all-gathers each block just before its forward and again
//            before its backward, and each block's gradients are reduce-scattered as soon as
//            they are final. On one rank, stage 3 keeps the whole buffers (nothing to shard).
//
// Tensor parallel (an `mp` communicator of M > 1 ranks): the model is this rank's shard of the
// transformer and every buffer above is its LOCAL layout (transformer_layout(cfg, M)); ZeRO then
// chunks that local buffer over the data-parallel comm, which joins the ranks holding the same
// shard. Files keep the single-process layout: full_params() gathers it, load_full_params()
// scatters it, and the optimizer is gathered / loaded in the full layout likewise.
//
// The Learner is a facade over its parts: ParamState (the parameters and gradients as the ZeRO
// stage keeps them), ShardedOptimizer (clipping, the step, its state to and from files),
// StepDriver (the micro-batches' forward and backward passes, evaluation forwards), and the
// Transformer-VQ carry (vq_carry.h) and coordinate check (coord_probe.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/model/coord_stats.h"
#include "meshlm/model/transformer.h"
#include "meshlm/optim/optimizer.h"
#include "meshlm/parallel/comm.h"
#include "meshlm/parallel/local_comm.h"
#include "meshlm/parallel/tp_shard.h"
#include "meshlm/parallel/zero_plan.h"
#include "meshlm/train/coord_probe.h"
#include "meshlm/train/diag_sums.h"
#include "meshlm/train/param_state.h"
#include "meshlm/train/sharded_optimizer.h"
#include "meshlm/train/step_driver.h"

namespace meshlm {

struct StepStats {
    float loss;  // mean over every scored target of the (global) step
    float lr;
    float grad_norm;  // global norm before clipping
    // model.attention vq: the last micro-batch's quantization on this rank (Transformer::vq_stats)
    std::optional<Transformer::VqStats> vq;
    // false: the step check (Learner::set_step_check) refused the update, nothing changed
    bool applied = true;
};

class Learner {
  public:
    // Plans for micro-batches of (batch, seq) and a schedule of total_steps optimizer steps.
    // `dp` (outliving the learner) is the data-parallel communicator; nullptr = one process.
    // `mp` is the model-parallel one (DeviceMesh::model_comm()); nullptr or 1 rank = no tensor
    // parallelism. Throws InvalidInput when the model does not split over mp's ranks. With
    // `device` cuda on several ranks they must be device communicators (NcclComm), whose
    // collectives take the device buffers; the host scalars go through their host().
    Learner(const ModelConfig& model, const OptimConfig& optim, int batch, int seq,
            long total_steps, Comm* dp = nullptr, int zero_stage = 0, Comm* mp = nullptr,
            Recompute recompute = Recompute::none, Precision precision = Precision::fp32,
            Device device = Device::cpu);
    // Why a run cannot train on `device` ("" when it can): the model's gaps (model_device_gap)
    // and the coordinate check (train.coord_interval > 0), which reads its updates on the host.
    // Every optimizer, ZeRO stage and tensor parallelism run there: several ranks train on
    // GPUs when dp and mp are device communicators (parallel/device_comm.h: NcclComm), which
    // take the buffers while host scalars go through their host().
    static std::string device_gap(const ModelConfig& model, Device device, int coord_interval = 0);
    // Not copied or moved: the optimizer's tensor sum and FSDP's stream point into it.
    Learner(const Learner&) = delete;
    Learner& operator=(const Learner&) = delete;

    bool tensor_parallel() const { return state_.tensor_parallel(); }
    // This rank's model (with tensor parallelism, its shard).
    Transformer& model() { return *model_; }
    // This rank's layout: transformer_layout, or its tensor-parallel shard.
    const ParamLayout& layout() const { return layout_; }
    // The single-process layout that files (checkpoints, model.safetensors) use.
    const ParamLayout& full_layout() const { return full_layout_; }
    const ZeroPlan& plan() const { return state_.plan(); }
    Device device() const { return state_.device(); }
    // The whole parameter buffer, on device(). With stage 3 it is current (FSDP: allocated)
    // only after sync_params(), until the next step.
    float* params() { return state_.params(); }
    // The whole gradient buffer of the last step, on device() (not on several ranks at stages
    // 2-3, which keep only their chunk).
    float* grads() { return state_.grads(); }
    Optimizer& optimizer() { return optim_.optimizer(); }
    long step() const { return optim_.optimizer().steps_taken(); }

    // Single-process init with `seed` (a TP rank keeps its shard of it).
    void init_params(std::uint64_t seed) { state_.init(seed); }
    // A host buffer of full_layout() to fill, then full_params_written() (resume, warm start).
    // Without TP on the CPU it is params() itself.
    float* full_params_buffer() { return state_.full_params_buffer(); }
    void full_params_written() { state_.full_params_written(); }
    // The whole model in full_layout(), in host memory (collective over both axes; every rank
    // gets it).
    const float* full_params() { return state_.full_params(); }
    // After the caller wrote the whole of params() (init, resume, warm start): stage 3 keeps
    // its chunk of it.
    void params_written() { state_.params_written(); }
    // Stage 3: all-gathers the whole model into params() (collective; FSDP allocates the buffer
    // for it, released by the next step). Others: nothing.
    void sync_params() { state_.sync_params(); }

    // The whole optimizer state as one host optimizer over full_layout() (collective with
    // stages 1-3, which all-gather the moments, and with TP) for a checkpoint, and back: each
    // rank takes its shard and chunk. nullptr = optimizer() is already that (stage 0 without TP
    // on the CPU).
    std::unique_ptr<Optimizer> gather_optimizer() { return optim_.gather(); }
    void load_optimizer(Optimizer& full) { optim_.load(full); }
    // This rank's part of a sharded checkpoint (io/shard_format.h): [begin, begin + count)
    // of its local buffer, i.e. its ZeRO chunk without the padding past layout().total(). The
    // parameters are current without sync_params() at every stage.
    // m and v are null where the optimizer keeps no such slot; stats are the optimizer's
    // statistics kept whole on every rank (Adafactor's factored ones; null for the others).
    using LocalChunk = ChunkState;
    // (Adafactor's packed second moments are unpacked into a buffer that lives until the next
    // train_step.)
    LocalChunk local_chunk() { return optim_.local_chunk(); }
    // The inverse (resuming at the same mesh): writes the chunk, zeroes its padding, all-gathers
    // over the data comm what this stage keeps whole (collective), sets the optimizer step.
    void load_local_chunk(const float* params, const float* m, const float* v, const float* stats,
                          long step) {
        optim_.load_local_chunk(params, m, v, stats, step);
    }
    // An optimizer over the whole full_layout() buffer with this run's groups, for gather / load.
    std::unique_ptr<Optimizer> make_full_optimizer() const { return optim_.make_full(); }

    // model.vq.update_len: each micro-batch's rows continue from the VQ attention states the
    // previous train_step left them (truncated backpropagation: the carried keys and values take
    // no gradient); reset_vq_carry() starts every row afresh (a new batch).
    void set_vq_carry(bool on) { driver_.carry().set(on); }
    void reset_vq_carry() { driver_.carry().reset(); }

    // One optimizer step over `micro` micro-batches of (B, T) rows of this rank; tokens and
    // targets hold micro*B*T ids each. The loss is the mean over every target >= 0 of all
    // micro-batches of all ranks (padding is masked with -1). B*T may not exceed the planned
    // batch*seq.
    StepStats train_step(const std::int32_t* tokens, const std::int32_t* targets, int micro, int B,
                         int T);
    StepStats train_step(const std::int32_t* tokens, const std::int32_t* targets, int micro) {
        return train_step(tokens, targets, micro, batch_, seq_);
    }
    // Mean loss of one batch without touching gradients (collective with stage 3).
    float eval_loss(const std::int32_t* tokens, const std::int32_t* targets) {
        return driver_.eval_forward(tokens, targets, batch_, seq_);
    }
    // Per-token losses of (B, T) rows, B <= the planned batch (collective with stage 3). B = 0
    // (none of an evaluation batch's rows are this rank's) returns nullptr; FSDP still runs
    // its collective forward, on one fully masked row. Transformer-VQ rows longer than planned
    // (model.vq.update_len) run in chunks of the planned length, carrying the attention state.
    const float* eval_losses(const std::int32_t* tokens, const std::int32_t* targets, int B,
                             int T) {
        return driver_.eval_losses(tokens, targets, B, T);
    }

    // Bytes allocated per rank, by kind (for `info` and memory reports); working = the buffers
    // stages 2-3 need during the step beyond their chunks (see zero_plan.h).
    std::size_t param_bytes() const { return state_.param_bytes(); }
    std::size_t grad_bytes() const { return state_.grad_bytes(); }
    std::size_t optimizer_bytes() const { return optim_.optimizer().state_bytes(); }
    std::size_t working_bytes() const { return state_.working_bytes(); }
    std::size_t activation_bytes() const { return model_->activation_bytes(); }
    // Coordinate check: the next train_step records the model's activation sums (coord()) and,
    // per tensor of layout(), the sum of |update| / (the tensor's learning rate) and its element
    // count over what this rank updates (update_sums(): [sum..., count...]). Sums, so that the
    // ranks can add theirs (an element updated on several ranks adds to sum and count alike).
    void record_coord_check() {
        MESHLM_CHECK(device() == Device::cpu, "the coordinate check reads its updates on the host");
        coord_.record(*model_, model_cfg_.n_layer, layout_.slices().size());
    }
    const CoordStats& coord() const { return coord_.coord(); }
    const std::vector<double>& update_sums() const { return coord_.update_sums(); }

    // Diagnostics (log.diag_interval): the next train_step records diag_sums.h's sums (read
    // only: the step itself is bitwise the same).
    void record_diagnostics() {
        diag_on_ = true;
        diag_.reset(model_cfg_.n_layer, layout_.slices().size());
        model_->set_residual_sums(&diag_.resid);
        driver_.set_diagnostics(&diag_);
    }
    const DiagSums& diagnostics() const { return diag_; }

    // Dropout masks of the next train_step: (seed, optimizer step, global row) keyed; row0 = the
    // global index of this rank's first row in each micro-batch of the global batch.
    void set_dropout(std::uint64_t seed, std::int64_t row0) { driver_.set_dropout(seed, row0); }

    // Called by every train_step once the step's loss and global gradient norm are known, just
    // before the optimizer update (every rank calls it at the same point, so it may run
    // collectives). false drops the update: parameters, optimizer state and step count stay as
    // they were, and the step's StepStats has applied = false (train/nan_policy.h).
    void set_step_check(std::function<bool(const StepStats&)> check) {
        step_check_ = std::move(check);
    }
    // A dropped update counted as a step (train.nan_policy=skip): the optimizer's step count
    // advances (schedule, dropout keys, checkpoints stay in step), nothing else changes.
    void count_skipped_step() { optimizer().set_steps_taken(step() + 1); }
    // Test hook (train.debug_inject_nan_step): at optimizer step `step` (1-based; 0 = never) the
    // first gradient element this rank holds becomes NaN just before the gradient norm, once.
    void inject_nan_at(long step) { inject_nan_step_ = step; }
    // What this rank holds of the parameters and of the last step's gradients: [begin, end) of
    // layout(), at data in host memory (for naming the first non-finite tensor; off the CPU a
    // copy, valid until the next call).
    using Held = HeldSpan;
    Held held_params() { return state_.held_params(); }
    Held held_grads() { return state_.held_grads(); }

  private:
    void update(float lr);  // the optimizer step, with the coordinate check's update sums
    void stop_diagnostics() {
        diag_on_ = false, model_->set_residual_sums(nullptr), driver_.set_diagnostics(nullptr);
    }

    ModelConfig model_cfg_;
    OptimConfig optim_cfg_;
    int batch_, seq_;
    long total_steps_;
    LocalComm local_;
    Comm& dp_;
    Comm& mp_;
    std::unique_ptr<CommModelGroup> mp_group_;  // tensor parallelism: the layers' collectives
    std::unique_ptr<Transformer> model_;        // the whole model, or this rank's shard
    ParamLayout layout_, full_layout_;
    ParamState state_;
    ShardedOptimizer optim_;
    StepDriver driver_;
    CoordProbe coord_;
    bool diag_on_ = false;
    DiagSums diag_;
    std::function<bool(const StepStats&)> step_check_;
    long inject_nan_step_ = 0;
};

}  // namespace meshlm

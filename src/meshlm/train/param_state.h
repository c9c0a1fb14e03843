// A Learner's parameters and gradients on this rank, as its ZeRO stage keeps them
// (parallel/zero_plan.h; learner.h says what each stage does): the whole flat buffers, the
// chunks stages 2-3 keep, FSDP's stream, the host copies off the CPU, and the moves between
// them (init, loading, gathering for files, the per-stage reduction and gather around the
// optimizer step).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "meshlm/core/buffer.h"
#include "meshlm/core/param_layout.h"
#include "meshlm/kernels/device_buffer.h"
#include "meshlm/model/model_config.h"
#include "meshlm/parallel/comm.h"
#include "meshlm/parallel/fsdp.h"
#include "meshlm/parallel/zero_plan.h"

namespace meshlm {

// n floats from src to dst, each on its device (a memcpy on the CPU).
void copy_floats(float* dst, Device dst_on, const float* src, Device src_on, std::size_t n);

// What a rank holds of the parameters or gradients: [begin, end) of its layout, at data in host
// memory (off the CPU a copy, valid until the next call).
struct HeldSpan {
    const float* data;
    std::size_t begin, end;
};

class ParamState {
  public:
    // `layout` is this rank's (tensor-parallel: local) layout, `full` the single-process one; ZeRO
    // chunks `layout` over dp. All outlive the state. bf16: FSDP gathers bf16 (parallel/fsdp.h).
    ParamState(const ModelConfig& model, const ParamLayout& layout, const ParamLayout& full,
               Comm& dp, Comm& mp, int zero_stage, bool bf16, Device device);
    ParamState(const ParamState&) = delete;
    ParamState& operator=(const ParamState&) = delete;

    const ZeroPlan& plan() const { return plan_; }
    Device device() const { return device_; }
    bool fsdp() const { return fsdp_; }  // stage 3 over several data ranks: parameters streamed
    bool streamed() const { return streamed_; }     // stage 2-3 over several: gradients streamed
    FsdpStream* stream() { return stream_.get(); }  // null unless streamed()
    bool tensor_parallel() const { return mp_.size() > 1; }

    float* params() { return params_.data(); }  // the whole buffer (FSDP: only on demand)
    float* grads() { return grads_.data(); }    // the whole buffer (not when streamed())
    std::size_t grad_floats() const { return grads_.size(); }
    float* param_shard() { return param_shard_.data(); }  // stage 3's chunk
    float* grad_shard() { return grad_shard_.data(); }    // stages 2-3's chunk
    // The reduced gradients this rank's optimizer reads: the chunk (stages 2-3), else whole.
    float* reduced_grads() { return plan_.stage >= 2 ? grad_shard() : grads(); }
    std::size_t reduced_grad_floats() const {
        return plan_.stage >= 2 ? grad_shard_.size() : grads_.size();
    }

    void init(std::uint64_t seed);
    float* full_params_buffer();
    void full_params_written();
    const float* full_params();
    void params_written();
    void sync_params();

    // Before a step's first micro-batch: FSDP drops a gathered whole copy, the others bring
    // params() up to date; the gradients this step accumulates into are zeroed.
    void begin_step();
    // After the backward passes: the null-gradient ranges zeroed (exactly zero by the math;
    // backward leaves rounding noise there).
    void zero_null_ranges();
    // Stages 0-1: the all-reduce; stages 2-3 on one rank: the chunk is the whole buffer.
    void reduce_gradients();
    // The running statistics of the layout (ParamSlice::ema_decay) take this step's sums.
    void fold_moving_averages();

    // What this rank's optimizer step updates: [begin, begin + count) of layout(), parameters
    // and gradients there; updated() brings the parameters every stage keeps up to date after it.
    struct Update {
        float* params;
        const float* grads;
        std::size_t begin, count;
    };
    Update update_range();
    void updated();

    // [begin, begin + count) of this rank's chunk without the padding past layout().total().
    std::pair<std::size_t, std::size_t> chunk_span() const;
    // The chunk's current parameters (the shard at stage 3, else in the whole buffer).
    float* chunk_params();
    // After chunk_params() was written (resuming at the same mesh): the stages that keep the
    // whole buffer all-gather it (collective), stage 3 gathers on the next sync_params().
    void chunk_params_written();
    // `count` floats of src on device() on the host (a copy off the CPU into slot 0-2 of three).
    const float* chunk_on_host(const float* src, std::size_t count, int slot);
    HeldSpan held_params();
    HeldSpan held_grads();

    std::size_t param_bytes() const;
    std::size_t grad_bytes() const;
    std::size_t working_bytes() const;

  private:
    float* whole_params();
    float* host_whole();
    void host_written();
    const float* host_read();

    const ModelConfig& model_;
    const ParamLayout &layout_, &full_layout_;
    Comm &dp_, &mp_;
    ZeroPlan plan_;
    bool fsdp_, streamed_;
    Device device_;                                 // where the parameters and gradients live
    kernels::FloatArray params_, grads_;            // whole buffers (FSDP: none, params_ on demand)
    kernels::FloatArray param_shard_, grad_shard_;  // stage 3 / stages 2-3, on device()
    Buffer<float> host_, held_host_;                // off the CPU: host copies (host_whole, held_*)
    Buffer<float> chunk_host_;                      // chunk_on_host() off the CPU: three slots
    Buffer<float> full_;          // TP: the full_layout() staging buffer (allocated on first use)
    bool params_current_ = true;  // stage 3: params_ holds the gathered current parameters
    std::unique_ptr<FsdpStream> stream_;
};

}  // namespace meshlm

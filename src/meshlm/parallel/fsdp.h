// FSDP: ZeRO stage 3 that streams the model block by block (core/param_stream.h); stage 2
// streams only the gradients the same way (parameters stay whole, nothing is gathered). Each rank
// keeps only its ZeRO chunk of the parameters and gradients (zero_plan.h); a unit of the flat
// layout -- a block, or the embeddings / ln_f -- is the contiguous range [lo, hi), of which rank
// r owns the part inside its chunk, so the unit is an uneven all-gather away (chunks are in rank
// order) and its gradients an uneven reduce-scatter away.
//
//   step start   all-gather units 0 (wte, wpe) and L + 1 (ln_f); they stay for the whole step
//                and their gradients accumulate over its micro-batches
//   forward      block l: wait for its all-gather (started when block l - 1 was acquired),
//                start block l + 1's, compute, free
//   backward     block l: gathered again (prefetching l - 1), gradients computed into a
//                block buffer, reduce-scattered (non-blocking) and added into the chunk
//   step end     reduce-scatter units 0 and L + 1's gradients; wait for everything
//
// Working memory: units 0 and L + 1 (parameters and gradients: like PyTorch's root FSDP unit,
// they are needed at both ends of forward and backward, and hold the tied embedding / head) and
// two block slots (one in use, one prefetching or reducing), each with a parameter and a
// gradient buffer and a receive buffer for its reduce-scatter, whose sum is added into the
// chunk (blocks are reduced once per micro-batch) -- fsdp_sizes() says how many floats. Bytes sent
// per step per rank (parallel/traffic.h convention): gathers of units 0 and L + 1 once, of every
// block twice per micro-batch, reduce-scatters of every block once per micro-batch and of units 0
// and L + 1 once: each (unit floats - this rank's part) * 4, or * 2 for every gather of a bf16
// run (`bf16`: half the bytes of all parameter traffic; gradients stay fp32).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "meshlm/core/buffer.h"
#include "meshlm/core/param_layout.h"
#include "meshlm/core/param_stream.h"
#include "meshlm/kernels/device_buffer.h"
#include "meshlm/parallel/comm.h"
#include "meshlm/parallel/zero_plan.h"

namespace meshlm {

struct FsdpSizes {
    bool gather;          // parameters sharded (stage 3) or whole (stage 2: gradients only)
    bool bf16 = false;    // units gathered in bf16 (a bf16 receive buffer per block slot)
    std::size_t root;     // floats of units 0 and L + 1 together
    std::size_t block;    // floats of the largest block unit
    std::size_t receive;  // largest part of any block inside one rank's chunk
    std::size_t working() const {  // floats: gradient buffers, and with `gather` parameter ones
        return root + 2 * (block + receive) + (gather ? root + 2 * block : 0) +
               (gather && bf16 ? 2 * ((block + 1) / 2) : 0);
    }
};

// The units of `layout` (ParamLayout::unit_range) and what a rank of `plan` buffers for them;
// bf16: stage 3 gathers the parameters in bf16.
FsdpSizes fsdp_sizes(const ParamLayout& layout, const ZeroPlan& plan, bool gather_params,
                     bool bf16 = false);

class FsdpStream final : public ParamStream {
  public:
    // grads: this rank's chunk (plan.chunk floats) of the flat gradient buffer of `layout`;
    // params: its chunk of the parameters when gather_params (stage 3), else the whole buffer
    // (stage 2: only gradients are streamed). They, comm and layout outlive the stream.
    // bf16 (train.precision: bf16, stage 3): every unit travels as bf16, rounded by each rank
    // from its own part, half the bytes; the model then computes with those rounded values, as
    // a one-process bf16 run computes with bf16 copies of every weight.
    // Every buffer, given and own, lives on comm.device() (device memory under NcclComm).
    FsdpStream(Comm& comm, const ZeroPlan& plan, const ParamLayout& layout, const float* params,
               float* grads, bool gather_params = true, bool bf16 = false);

    // Gathers units 0 and L + 1 (kept until end()); with gradients, zeroes their accumulators.
    // Collective.
    void begin(bool gradients);
    // Finishes every block's reduce-scatter and, after a begin(true), reduce-scatters units 0
    // and L + 1's gradients; the chunk of gradients is then complete. Collective.
    void end();

    const float* acquire(int unit, Pass pass) override;
    void release(int unit) override;
    float* grads(int unit) override;
    void grads_done(int unit) override;

    std::size_t buffer_bytes() const { return sizes_.working() * sizeof(float); }

  private:
    struct Slot {
        kernels::FloatArray params, grads, receive;
        kernels::DeviceBuffer params16;  // bf16 blocks: what the all-gather fills
        bool widen = false;              // params16 holds a gather params has not seen yet
        int unit = -1;                   // whose parameters it holds or is gathering
        bool held = false;               // acquired and not released yet
        CommRequest gather;
        int grads_of = -1;  // whose gradients backward is accumulating into `grads`
        int reducing = -1;  // whose gradients its reduce-scatter is summing
        CommRequest reduce;
    };
    bool is_block(int unit) const { return unit >= 1 && unit <= n_units_ - 2; }
    float* root_at(kernels::FloatArray& buf, int unit);
    // The views the ops take over this stream's buffers.
    Tensor on(const float* p, std::size_t n) const { return flat(p, n, device_); }
    Tensor on(const std::uint16_t* p, std::size_t n) const { return flat(p, n, device_); }
    // Copies this rank's part of `unit` into dst (the unit's layout) and starts its all-gather.
    CommRequest start_gather(int unit, float* dst);
    // The same in bf16: rounds this rank's part into dst (the unit's layout).
    CommRequest start_gather16(int unit, std::uint16_t* dst);
    // Starts gathering block `unit` into slot s (in bf16 with sizes_.bf16); finish_gather waits
    // and, for a bf16 gather, widens it into s.params.
    void start_block_gather(Slot& s, int unit);
    void finish_gather(Slot& s);
    // Adds a finished reduce-scatter's part of `unit` (in `receive`) into the gradient chunk.
    void accumulate(int unit, const float* receive);
    void finish_reduce(Slot& s);

    Comm& comm_;
    Device device_;
    ZeroPlan plan_;
    const float* params_;
    float* grads_;
    int n_units_;
    std::vector<std::pair<std::size_t, std::size_t>> units_;  // [lo, hi) per unit
    std::vector<std::vector<std::size_t>> counts_;            // per unit, per rank
    FsdpSizes sizes_;
    kernels::FloatArray root_params_, root_grads_;
    std::array<Slot, 2> slots_;
    unsigned next_grads_ = 0;  // blocks' gradients alternate between the two slots
    bool gradients_ = false;
};

}  // namespace meshlm

// The tensor-parallel collectives over a model's flat buffers: gathering the whole model from
// the ranks' shards, and the global sum of squares. The copies between a whole buffer and one
// rank's shard (tp_scatter, tp_place) are layout math, in core/tp_layout.h.
#pragma once

#include <cstddef>

#include "meshlm/core/model_comm.h"
#include "meshlm/core/param_layout.h"
#include "meshlm/core/tp_layout.h"
#include "meshlm/parallel/comm.h"

namespace meshlm {

// Every rank gets the full buffer from the local shards of the model-parallel group `comm`
// (an all-gather of the flat shards, then tp_place). Host buffers: collective over comm.host().
void tp_gather(const ParamLayout& full_layout, const ParamLayout& local_layout, Comm& comm,
               const float* local, float* full);

// Sum of squares of a TP-sharded buffer over the whole model (for global gradient-norm
// clipping): split slices summed over the model ranks, replicated ones counted once. `local`
// lives on `device`; the partial sums travel over comm.host(). Collective over comm; every
// rank gets the same value.
double tp_sum_squares(const ParamLayout& local_layout, const float* local, Comm& comm,
                      Device device = Device::cpu);

// The model-parallel collectives the model's layers call (core/model_comm.h), over a Comm.
class CommModelGroup final : public ModelComm {
  public:
    explicit CommModelGroup(Comm& comm) : comm_(comm) {}
    int size() const override { return comm_.size(); }
    int rank() const override { return comm_.rank(); }
    void sum(float* x, std::size_t n) override { comm_.all_reduce_sum(x, n); }
    void max(float* x, std::size_t n) override { comm_.all_reduce_max(x, n); }

  private:
    Comm& comm_;
};

}  // namespace meshlm

// Moves between the whole model's flat buffer (the layout files use) and one model rank's
// tensor-parallel shard, for any layout: what each rank holds of a tensor comes from the
// registry's split facts (core/param_layout.h), never from names. A full layout and a local one
// are the same model's transformer layouts for 1 and M model ranks: same slices, same order.
#pragma once

#include <cstddef>

#include "meshlm/core/model_comm.h"
#include "meshlm/core/param_layout.h"
#include "meshlm/parallel/comm.h"

namespace meshlm {

// full -> the local shard of model rank `rank` of `model`. Padding is left untouched.
void tp_scatter(const ParamLayout& full_layout, const ParamLayout& local_layout, int model,
                int rank, const float* full, float* local);
// local shard of rank `rank` -> its part of full; placing every rank's shard rebuilds full.
void tp_place(const ParamLayout& full_layout, const ParamLayout& local_layout, int model, int rank,
              const float* local, float* full);
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

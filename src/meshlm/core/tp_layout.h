// Copies between the whole model's flat buffer (the layout files use) and one model rank's
// tensor-parallel shard, for any layout: what each rank holds of a tensor comes from the
// registry's split facts (param_layout.h), never from names. A full layout and a local one are
// the same model's transformer layouts for 1 and M model ranks: same slices, same order. Pure
// layout math on host buffers, so the checkpoint formats (io/) use it without parallel/.
#pragma once

#include "meshlm/core/param_layout.h"

namespace meshlm {

// full -> the local shard of model rank `rank` of `model`. Padding is left untouched.
void tp_scatter(const ParamLayout& full_layout, const ParamLayout& local_layout, int model,
                int rank, const float* full, float* local);
// local shard of rank `rank` -> its part of full; placing every rank's shard rebuilds full.
void tp_place(const ParamLayout& full_layout, const ParamLayout& local_layout, int model, int rank,
              const float* local, float* full);

}  // namespace meshlm

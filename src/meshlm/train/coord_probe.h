// The coordinate check's view into one training step (muP, cmd coord-check): the model's
// activation sums and, per tensor of the layout, the sum of |update| / (the tensor's learning
// rate) and its element count over what this rank updates. Sums, so that the ranks can add
// theirs (an element updated on several ranks adds to sum and count alike).
#pragma once

#include <cstddef>
#include <vector>

#include "meshlm/core/param_layout.h"
#include "meshlm/model/coord_stats.h"
#include "meshlm/model/model_config.h"
#include "meshlm/model/transformer.h"
#include "meshlm/optim/optim_config.h"

namespace meshlm {

class CoordProbe {
  public:
    // The next step records into this probe.
    void record(Transformer& model, int n_layer, std::size_t tensors) {
        on_ = true;
        model.set_coord_stats(&coord_);
        coord_.reset(n_layer);
        update_sums_.assign(2 * tensors, 0.0);
    }
    bool on() const { return on_; }
    void stop(Transformer& model) { on_ = false, model.set_coord_stats(nullptr); }

    const CoordStats& coord() const { return coord_; }
    const std::vector<double>& update_sums() const { return update_sums_; }  // [sum..., count...]
    // Adds |after - before| / lr_tensor over [lo, hi) of `layout` (before and after at lo).
    void add_update_sums(const ParamLayout& layout, const OptimConfig& optim,
                         const ModelConfig& model, const float* before, const float* after,
                         std::size_t lo, std::size_t hi, float lr);

  private:
    bool on_ = false;
    CoordStats coord_;
    std::vector<double> update_sums_;
};

}  // namespace meshlm

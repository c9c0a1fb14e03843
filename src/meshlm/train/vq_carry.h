// model.vq.update_len: the Transformer-VQ attention states each micro-batch's rows carry from one
// train_step to the next (truncated backpropagation: the carried keys and values take no
// gradient).
#pragma once

#include <cstddef>
#include <vector>

#include "meshlm/kernels/ops/op_params.h"

namespace meshlm {

class VqCarry {
  public:
    void set(bool on) { on_ = on, states_.clear(); }
    bool on() const { return on_; }
    // Every row starts afresh (a new batch).
    void reset() {
        for (auto& st : states_) st.clear();
    }
    // The states of micro-batch m of `micro` (layers x B rows each), kept from the last step.
    kernels::VqAttnState* states(int m, int micro, int n_layer, int B) {
        const std::size_t per_micro = static_cast<std::size_t>(n_layer) * B;
        if (states_.size() < per_micro * micro) states_.resize(per_micro * micro);
        return states_.data() + per_micro * m;
    }

  private:
    bool on_ = false;
    std::vector<kernels::VqAttnState> states_;  // [micro][layer][row]
};

}  // namespace meshlm

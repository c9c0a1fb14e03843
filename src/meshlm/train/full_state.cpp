#include "meshlm/train/full_state.h"

#include <algorithm>

#include "meshlm/model/transformer_layout.h"
#include "meshlm/optim/adafactor_plan.h"
#include "meshlm/optim/optimizer.h"

namespace meshlm {

std::vector<StateTensor> optimizer_stat_tensors(const ModelConfig& model,
                                                const OptimConfig& optim) {
    if (optim.name != "adafactor") return {};
    return adafactor_plan(transformer_layout(model), 1, 0, 0, 0, optim).stats;
}

FullTrainingState read_full_state(const std::string& dir, const ModelConfig& model,
                                  const OptimConfig& optim) {
    const std::size_t n = transformer_layout(model).total();
    const OptimizerSlots slots = optimizer_slots(optim.name);
    FullTrainingState s;
    s.params.assign(n, 0.f);
    if (slots.m) s.m.assign(n, 0.f);
    if (slots.v) s.v.assign(n, 0.f);
    s.stat_tensors = optimizer_stat_tensors(model, optim);
    for (const StateTensor& t : s.stat_tensors)
        s.stats.resize(
            std::max(s.stats.size(), t.offset + static_cast<std::size_t>(t.shape.numel())));
    s.step = load_checkpoint_state(dir, model, s.params.data(), slots.m ? s.m.data() : nullptr,
                                   slots.v ? s.v.data() : nullptr, s.stat_tensors, s.stats.data());
    return s;
}

}  // namespace meshlm
